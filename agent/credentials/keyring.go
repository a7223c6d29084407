package credentials

import (
	"net"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	"github.com/podlife/podlife/runtime"
)

// Keyring holds registry credentials by location and gives those that
// match an image: the kubelet's BasicDockerKeyring. The zero value is
// empty and ready. It is not safe for concurrent Add; Lookup may run
// concurrently once filled.
type Keyring struct {
	index []string // keys, distinct, reverse-sorted
	creds map[string][]runtime.ImageAuth
}

// Add adds the entries of cfg. An entry whose location is not a valid
// URL is skipped and named in the returned list (the kubelet logs and
// ignores it).
func (k *Keyring) Add(cfg DockerConfig) (skipped []string) {
	if k.creds == nil {
		k.creds = map[string][]runtime.ImageAuth{}
	}
	// Entries in a fixed order (a JSON object's order is lost in the map):
	// several entries with the same key then come in a stable order.
	locs := make([]string, 0, len(cfg))
	for loc := range cfg {
		locs = append(locs, loc)
	}
	sort.Strings(locs)
	for _, loc := range locs {
		key, ok := locationKey(loc)
		if !ok {
			skipped = append(skipped, loc)
			continue
		}
		e := cfg[loc]
		if _, seen := k.creds[key]; !seen {
			k.index = append(k.index, key)
		}
		k.creds[key] = append(k.creds[key], runtime.ImageAuth{
			Username:      e.Username,
			Password:      e.Password,
			IdentityToken: e.IdentityToken,
		})
	}
	sort.Sort(sort.Reverse(sort.StringSlice(k.index)))
	return skipped
}

// locationKey is the key of a registry location: host[:port][/path],
// without scheme, and without a leading /v1/ or /v2/ of the path.
func locationKey(loc string) (string, bool) {
	v := loc
	if !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "http://") {
		v = "https://" + v
	}
	u, err := url.Parse(v)
	if err != nil {
		return "", false
	}
	p := u.Path
	if strings.HasPrefix(p, "/v2/") || strings.HasPrefix(p, "/v1/") {
		p = p[3:]
	}
	if p == "" || p == "/" {
		return u.Host, true
	}
	return u.Host + p, true
}

// Docker Hub's names: images without a registry are on docker.io, and
// credentials for index.docker.io apply to them when nothing else does.
const (
	dockerHub       = "docker.io"
	dockerHubLegacy = "index.docker.io"
)

// Lookup returns the credentials for image (a reference as in a pod's
// spec: "registry:5000/team/app:1.0", "busybox", "app@sha256:..."), in the
// order to try them; none when nothing matches.
func (k *Keyring) Lookup(image string) []runtime.ImageAuth {
	repo := Repository(image)
	if repo == "" {
		return nil
	}
	var out []runtime.ImageAuth
	for _, key := range k.index {
		if urlsMatch(key, repo) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) > 0 {
		return out
	}
	if isDockerHub(repo) {
		return append(out, k.creds[dockerHubLegacy]...)
	}
	return nil
}

// Len is the number of credentials the keyring holds.
func (k *Keyring) Len() int {
	n := 0
	for _, c := range k.creds {
		n += len(c)
	}
	return n
}

// Repository is image's repository, normalized as the container runtime
// reads it: with its registry ("docker.io" when it names none,
// "library/" before a Docker Hub name of one component), without tag or
// digest. "busybox:1.36" is "docker.io/library/busybox";
// "127.0.0.1:5000/team/app:1.0" is "127.0.0.1:5000/team/app". Empty for
// an empty image.
func Repository(image string) string {
	name := image
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndexByte(name, ':'); i >= 0 && !strings.Contains(name[i:], "/") {
		name = name[:i]
	}
	if name == "" {
		return ""
	}
	domain, rest := dockerHub, name
	if i := strings.IndexByte(name, '/'); i >= 0 {
		first := name[:i]
		if strings.ContainsAny(first, ".:") || first == "localhost" || strings.ToLower(first) != first {
			domain, rest = first, name[i+1:]
		}
	}
	if domain == dockerHubLegacy {
		domain = dockerHub
	}
	if domain == dockerHub && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	return domain + "/" + rest
}

// isDockerHub reports whether repository (normalized) is on Docker Hub.
func isDockerHub(repo string) bool {
	first, _, found := strings.Cut(repo, "/")
	if first == "" {
		return false
	}
	if !found || first == dockerHub || first == dockerHubLegacy {
		return true
	}
	return !strings.ContainsAny(first, ".:")
}

// urlsMatch reports whether the keyring key glob matches the repository
// target, both without scheme: same port, same number of host labels,
// each label matching as a filepath glob, and the key's path a string
// prefix of the target's.
func urlsMatch(glob, target string) bool {
	g, err := url.Parse("https://" + glob)
	if err != nil {
		return false
	}
	t, err := url.Parse("https://" + target)
	if err != nil {
		return false
	}
	gLabels, gPort := splitHost(g.Host)
	tLabels, tPort := splitHost(t.Host)
	if gPort != tPort || len(gLabels) != len(tLabels) {
		return false
	}
	if !strings.HasPrefix(t.Path, g.Path) {
		return false
	}
	for i, gl := range gLabels {
		if ok, err := filepath.Match(gl, tLabels[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

// splitHost splits host[:port] into its dot-separated labels and port.
func splitHost(hostport string) ([]string, string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}
