package imagegc

import "testing"

func TestNormalizeRef(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                     "docker.io/library/busybox:latest",
		"busybox:1.36":                "docker.io/library/busybox:1.36",
		"user/app":                    "docker.io/user/app:latest",
		"registry.k8s.io/pause:3.10":  "registry.k8s.io/pause:3.10",
		"localhost/podlife/pause:1.0": "localhost/podlife/pause:1.0",
		"127.0.0.1:5000/x":            "127.0.0.1:5000/x:latest",
		"busybox@sha256:abc":          "docker.io/library/busybox@sha256:abc",
		"sha256:abc":                  "sha256:abc",
		"":                            "",
	} {
		if got := normalizeRef(in); got != want {
			t.Errorf("normalizeRef(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzNormalizeRef(f *testing.F) {
	f.Add("busybox")
	f.Add("a/b/c:d@sha256:e")
	f.Fuzz(func(t *testing.T, ref string) {
		n := normalizeRef(ref)
		if normalizeRef(n) != n {
			t.Errorf("normalizeRef is not idempotent on %q: %q then %q", ref, n, normalizeRef(n))
		}
	})
}
