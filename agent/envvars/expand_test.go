package envvars

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

func TestCommandAndArgs(t *testing.T) {
	c := &v1.Container{Command: []string{"/bin/$(CMD)", "$$(CMD)"}, Args: []string{"--x=$(X)", "$(NOPE)"}}
	cmd, args := CommandAndArgs(c, []EnvVar{{Name: "CMD", Value: "sh"}, {Name: "X", Value: "1"}})
	if d := cmp.Diff([]string{"/bin/sh", "$(CMD)"}, cmd); d != "" {
		t.Errorf("command (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"--x=1", "$(NOPE)"}, args); d != "" {
		t.Errorf("args (-want +got):\n%s", d)
	}
	if cmd, args := CommandAndArgs(&v1.Container{}, nil); cmd != nil || args != nil {
		t.Errorf("nil command and args became %q %q", cmd, args)
	}
}
