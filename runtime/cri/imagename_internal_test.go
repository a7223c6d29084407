package cri

import (
	"strings"
	"testing"
)

func TestCheckImageName(t *testing.T) {
	hex64 := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		image string
		want  string // "" valid; else the error's end
	}{
		{"busybox", ""},
		{"busybox:1.36", ""},
		{"localhost/podlife/pause:1.0", ""},
		{"127.0.0.1:1/nothing:1", ""},
		{"registry.k8s.io/pause:3.10", ""},
		{"Registry.Example.com:5000/team/app_x__y-z:v1.2-rc", ""},
		{"[::1]:5000/app:1", ""},
		{"nginx@sha256:" + hex64, ""},
		{"nginx:1@sha256:" + hex64, ""},
		{"Busybox", "invalid reference format: repository name (Busybox) must be lowercase"},
		{"example.com/Team/app", "invalid reference format: repository name (Team/app) must be lowercase"},
		{"nginx:", "invalid reference format"},
		{"nginx:1:2", "invalid reference format"},
		{"a b", "invalid reference format"},
		{":1", "invalid reference format"},
		{"-app", "invalid reference format"},
		{"app@sha256:abc", "invalid reference format"},
		{hex64, "cannot specify 64-byte hexadecimal strings"},
		{"x/" + strings.Repeat("a", 260), "repository name must not be more than 255 characters"},
	} {
		err := checkImageName(tc.image)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("checkImageName(%q): %v, want nil", tc.image, err)
		case tc.want != "" && (err == nil || !strings.HasSuffix(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "couldn't parse image name ")):
			t.Errorf("checkImageName(%q): %v, want ...%s", tc.image, err, tc.want)
		}
	}
}
