package cri

import (
	"path/filepath"
	"testing"
)

func TestUnderVolumeRoot(t *testing.T) {
	r := &Runtime{opts: Options{VolumeRoot: "/var/podlife"}}
	for path, want := range map[string]bool{
		"/var/podlife/uid/logs/c/0.log": true,
		"/var/podlife":                  false,
		"/var/podlife/../etc/passwd":    false,
		"/var/podlife-other/x":          false,
		"/etc/passwd":                   false,
		"relative/x":                    false,
		"/var/podlife/..x/file":         true,
	} {
		if got := r.underVolumeRoot(path); got != want {
			t.Errorf("underVolumeRoot(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestGlobEscape(t *testing.T) {
	for _, name := range []string{"a*b", "a?b", "a[b]", `a\b`, "plain"} {
		if ok, err := filepath.Match(globEscape(name), name); err != nil || !ok {
			t.Errorf("globEscape(%q) does not match itself: %v", name, err)
		}
	}
	if ok, _ := filepath.Match(globEscape("a*")+".*", "abc.1"); ok {
		t.Error("an escaped * matched other names")
	}
}
