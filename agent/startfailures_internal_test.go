package agent

import (
	"errors"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
)

func TestOnlyStartFailures(t *testing.T) {
	start := fmt.Errorf("container %q: %w", "a", &runtime.StartError{Container: "a", Reason: runtime.ErrImagePull, Message: "x"})
	backOff := fmt.Errorf("container %q: %w", "b", &runtime.BackOffError{Container: "b", Message: "back-off 10s"})
	other := fmt.Errorf("sandbox: %w", runtime.ErrUnavailable)
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"one start failure", start, true},
		{"joined start failures and back-offs", errors.Join(start, backOff), true},
		{"and another error", errors.Join(start, other), false},
		{"another error", other, false},
	} {
		if got := onlyStartFailures(tc.err); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Each sync replaces the reasons of the previous one; a change is
// reported, the same reasons again are not.
func TestNoteStartFailures(t *testing.T) {
	a := &Agent{pending: map[types.UID]pendingStarts{}}
	pull := func(reason error, msg string) error {
		return fmt.Errorf("container %q: %w", "a", &runtime.StartError{Container: "a", Reason: reason, Message: msg})
	}
	backOff := fmt.Errorf("container %q: %w", "b", &runtime.BackOffError{Container: "b", Message: "back-off 10s"})
	steps := []struct {
		err         error
		changed     bool
		failure     string // container a's reason, "" for none
		withBackOff bool
	}{
		{pull(runtime.ErrImagePull, "refused"), true, "ErrImagePull", false},
		{pull(runtime.ErrImagePull, "refused"), false, "ErrImagePull", false},
		{errors.Join(pull(runtime.ErrImagePullBackOff, "Back-off"), backOff), true, "ImagePullBackOff", true},
		{fmt.Errorf("sandbox: %w", runtime.ErrUnavailable), true, "", false},
		{nil, false, "", false},
	}
	for i, s := range steps {
		if got := a.noteStartFailures("u", s.err); got != s.changed {
			t.Errorf("step %d: changed %v, want %v", i, got, s.changed)
		}
		p, ok := a.pending["u"]
		if got := p.failures["a"].Reason; got != s.failure {
			t.Errorf("step %d: reason %q, want %q", i, got, s.failure)
		}
		if _, b := p.backOff["b"]; b != s.withBackOff {
			t.Errorf("step %d: back-off noted %v, want %v", i, b, s.withBackOff)
		}
		if ok != (s.failure != "" || s.withBackOff) {
			t.Errorf("step %d: entry kept %v", i, ok)
		}
	}
}
