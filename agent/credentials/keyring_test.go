package credentials

import (
	"encoding/base64"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/podlife/podlife/runtime"
)

func TestRepository(t *testing.T) {
	for image, want := range map[string]string{
		"busybox":                                "docker.io/library/busybox",
		"busybox:1.36":                           "docker.io/library/busybox",
		"busybox@sha256:0123":                    "docker.io/library/busybox",
		"team/app:2":                             "docker.io/team/app",
		"docker.io/busybox":                      "docker.io/library/busybox",
		"index.docker.io/team/app":               "docker.io/team/app",
		"localhost/podlife/pause:1.0":            "localhost/podlife/pause",
		"localhost:5000/app":                     "localhost:5000/app",
		"127.0.0.1:15000/podlife/private:1.0":    "127.0.0.1:15000/podlife/private",
		"quay.io/coreos/etcd:v3@sha256:abcdef":   "quay.io/coreos/etcd",
		"registry.example.com:5000/a/b/c:latest": "registry.example.com:5000/a/b/c",
		"":                                       "",
	} {
		if got := Repository(image); got != want {
			t.Errorf("Repository(%q) = %q, want %q", image, got, want)
		}
	}
}

// The kubelet's URLsMatch cases (pkg/credentialprovider keyring_test.go).
func TestURLsMatch(t *testing.T) {
	for _, tc := range []struct {
		glob, target string
		match        bool
	}{
		{"*.kubernetes.io", "prefix.kubernetes.io", true},
		{"prefix.*.io", "prefix.kubernetes.io", true},
		{"prefix.kubernetes.*", "prefix.kubernetes.io", true},
		{"*-good.kubernetes.io", "prefix-good.kubernetes.io", true},
		{"*.kubernetes.io", "kubernetes.io", false},                 // label count
		{"*.*.kubernetes.io", "a.b.kubernetes.io", true},            // one glob per label
		{"*.kubernetes.io", "a.b.kubernetes.io", false},             // '*' does not span labels
		{"*-bad.kubernetes.io", "prefix-good.kubernetes.io", false}, // glob mismatch
		{"kubernetes.io:1111", "kubernetes.io:1111", true},
		{"kubernetes.io", "kubernetes.io:1111", false},
		{"kubernetes.io:1111", "kubernetes.io", false},
		{"kubernetes.io:1111", "kubernetes.io:2222", false},
		{"*.kubernetes.io:1111", "prefix.kubernetes.io:1111", true},
		{"kubernetes.io/foo", "kubernetes.io/foo/bar", true},
		{"kubernetes.io/foo", "kubernetes.io/bar", false},
		{"kubernetes.io/foo", "kubernetes.io/foobar", true}, // a string prefix, as in the kubelet
		{"kubernetes.io/foo/bar", "kubernetes.io/foo", false},
		{"*.kubernetes.io/foo", "a.kubernetes.io/foo/bar", true},
		{"127.0.0.1:15000", "127.0.0.1:15000/podlife/private", true},
		{"127.0.0.*:15000", "127.0.0.1:15000/podlife/private", true},
		{"127.0.0.1", "127.0.0.1:15000/podlife/private", false},
		{"[abc.kubernetes.io", "abc.kubernetes.io", false}, // a bad pattern matches nothing
	} {
		if got := urlsMatch(tc.glob, tc.target); got != tc.match {
			t.Errorf("urlsMatch(%q, %q) = %v, want %v", tc.glob, tc.target, got, tc.match)
		}
	}
}

func TestIsDockerHub(t *testing.T) {
	for repo, want := range map[string]bool{
		"foo":                    true,
		"library/foo":            true,
		"docker.io/library/foo":  true,
		"index.docker.io/a/b":    true,
		"team/app":               true,
		"quay.io/a/b":            false,
		"localhost:5000/a":       false,
		"registry.example.com/a": false,
		"":                       false,
		"/foo":                   false,
	} {
		if got := isDockerHub(repo); got != want {
			t.Errorf("isDockerHub(%q) = %v, want %v", repo, got, want)
		}
	}
}

func user(name string) runtime.ImageAuth {
	return runtime.ImageAuth{Username: name, Password: "pw-" + name}
}

func entry(name string) Entry { return Entry{Username: name, Password: "pw-" + name} }

func TestKeyringLookup(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfgs  []DockerConfig // added in order (one per Secret)
		image string
		want  []runtime.ImageAuth
	}{
		{
			name:  "host",
			cfgs:  []DockerConfig{{"registry.example.com": entry("a")}},
			image: "registry.example.com/team/app:1.0",
			want:  []runtime.ImageAuth{user("a")},
		},
		{
			name:  "scheme and /v1/ stripped",
			cfgs:  []DockerConfig{{"https://registry.example.com/v1/": entry("a")}},
			image: "registry.example.com/app",
			want:  []runtime.ImageAuth{user("a")},
		},
		{
			name:  "http scheme and /v2/ path prefix",
			cfgs:  []DockerConfig{{"http://registry.example.com/v2/team": entry("a")}},
			image: "registry.example.com/team/app",
			want:  []runtime.ImageAuth{user("a")},
		},
		{
			name:  "other host",
			cfgs:  []DockerConfig{{"registry.example.com": entry("a")}},
			image: "other.example.com/app",
		},
		{
			name:  "glob",
			cfgs:  []DockerConfig{{"*.example.com": entry("a")}},
			image: "registry.example.com/app",
			want:  []runtime.ImageAuth{user("a")},
		},
		{
			name:  "glob does not cross labels",
			cfgs:  []DockerConfig{{"*.example.com": entry("a")}},
			image: "a.registry.example.com/app",
		},
		{
			name:  "port must match",
			cfgs:  []DockerConfig{{"127.0.0.1:15000": entry("a"), "127.0.0.1": entry("b")}},
			image: "127.0.0.1:15000/podlife/private:1.0",
			want:  []runtime.ImageAuth{user("a")},
		},
		{
			name:  "entry without port does not match an image with one",
			cfgs:  []DockerConfig{{"127.0.0.1": entry("b")}},
			image: "127.0.0.1:15000/podlife/private:1.0",
		},
		{
			name: "several matches, most specific first",
			cfgs: []DockerConfig{{
				"quay.io":             entry("host"),
				"quay.io/coreos":      entry("ns"),
				"quay.io/coreos/etcd": entry("repo"),
				"quay.io/other":       entry("other"),
				"*.io":                entry("glob"),
			}},
			image: "quay.io/coreos/etcd:v3",
			want:  []runtime.ImageAuth{user("repo"), user("ns"), user("host"), user("glob")},
		},
		{
			name: "same key in two secrets: both, in the secrets' order",
			cfgs: []DockerConfig{
				{"registry.example.com": entry("first")},
				{"https://registry.example.com": entry("second")},
			},
			image: "registry.example.com/app",
			want:  []runtime.ImageAuth{user("first"), user("second")},
		},
		{
			name:  "docker hub: index.docker.io for an unqualified image",
			cfgs:  []DockerConfig{{"https://index.docker.io/v1/": entry("hub")}},
			image: "google/docker-registry",
			want:  []runtime.ImageAuth{user("hub")},
		},
		{
			name:  "docker hub: index.docker.io for a library image",
			cfgs:  []DockerConfig{{"https://index.docker.io/v1/": entry("hub")}},
			image: "jenkins",
			want:  []runtime.ImageAuth{user("hub")},
		},
		{
			name:  "docker hub: index.docker.io for a qualified image",
			cfgs:  []DockerConfig{{"index.docker.io": entry("hub")}},
			image: "index.docker.io/google/docker-registry",
			want:  []runtime.ImageAuth{user("hub")},
		},
		{
			name:  "docker hub: docker.io entry",
			cfgs:  []DockerConfig{{"docker.io": entry("hub")}},
			image: "busybox",
			want:  []runtime.ImageAuth{user("hub")},
		},
		{
			name:  "docker hub: docker.io path entry",
			cfgs:  []DockerConfig{{"docker.io/team": entry("team"), "index.docker.io": entry("hub")}},
			image: "team/app",
			want:  []runtime.ImageAuth{user("team")},
		},
		{
			name:  "docker hub: index.docker.io only when nothing matched",
			cfgs:  []DockerConfig{{"docker.io/team": entry("team"), "index.docker.io": entry("hub")}},
			image: "other/app",
			want:  []runtime.ImageAuth{user("hub")},
		},
		{
			name:  "docker hub credentials are not for other registries",
			cfgs:  []DockerConfig{{"https://index.docker.io/v1/": entry("hub")}},
			image: "example.com/foo",
		},
		{
			name:  "docker hub credentials are not for localhost",
			cfgs:  []DockerConfig{{"https://index.docker.io/v1/": entry("hub")}},
			image: "localhost:5000/foo",
		},
		{
			name:  "identity token",
			cfgs:  []DockerConfig{{"registry.example.com": {IdentityToken: "tok"}}},
			image: "registry.example.com/app",
			want:  []runtime.ImageAuth{{IdentityToken: "tok"}},
		},
		{
			name:  "empty image",
			cfgs:  []DockerConfig{{"docker.io": entry("hub")}},
			image: "",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var k Keyring
			for _, c := range tc.cfgs {
				if skipped := k.Add(c); len(skipped) > 0 {
					t.Fatalf("skipped %q", skipped)
				}
			}
			if diff := cmp.Diff(tc.want, k.Lookup(tc.image)); diff != "" {
				t.Errorf("Lookup(%q) (-want +got):\n%s", tc.image, diff)
			}
		})
	}
}

func TestKeyringAddSkipsBadLocation(t *testing.T) {
	var k Keyring
	skipped := k.Add(DockerConfig{"https://bad host/": entry("a"), "good.example.com": entry("b")})
	if diff := cmp.Diff([]string{"https://bad host/"}, skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	if k.Len() != 1 {
		t.Errorf("Len = %d, want 1", k.Len())
	}
}

func TestZeroKeyring(t *testing.T) {
	var k Keyring
	if got := k.Lookup("busybox"); got != nil {
		t.Errorf("Lookup on an empty keyring = %v", got)
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
