package imagegc

import "strings"

// normalizeRef gives an image reference the form the runtime lists it
// in: with its registry (docker.io by default, with library/ for a
// one-component name) and a tag (latest) unless it has a digest. Image
// IDs ("sha256:…") are returned as they are.
func normalizeRef(ref string) string {
	if ref == "" || strings.HasPrefix(ref, "sha256:") {
		return ref
	}
	name, digest, hasDigest := strings.Cut(ref, "@")
	domain, rest, found := strings.Cut(name, "/")
	if !found || (!strings.ContainsAny(domain, ".:") && domain != "localhost") {
		domain, rest = "docker.io", name
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	last := rest[strings.LastIndex(rest, "/")+1:]
	if !hasDigest && !strings.Contains(last, ":") {
		rest += ":latest"
	}
	out := domain + "/" + rest
	if hasDigest {
		out += "@" + digest
	}
	return out
}
