package fakecri

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// imageRef is a parsed image reference, normalized as containerd (and the
// docker reference library) normalizes it: "busybox" is
// "docker.io/library/busybox:latest", and a name without tag or digest gets
// the tag "latest".
type imageRef struct {
	repo   string // "docker.io/library/busybox"
	tag    string // "latest", or "" with a digest
	digest string // "sha256:…", or ""
}

// parseImageRef normalizes ref. It does not validate it beyond its shape: a
// fake accepts any name a test gives it.
func parseImageRef(ref string) imageRef {
	var r imageRef
	name := ref
	if i := strings.Index(name, "@"); i >= 0 {
		name, r.digest = name[:i], name[i+1:]
	}
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, r.tag = name[:i], name[i+1:]
	}
	first, _, hasSlash := strings.Cut(name, "/")
	isDomain := hasSlash && (strings.ContainsAny(first, ".:") || first == "localhost")
	switch {
	case !hasSlash:
		name = "docker.io/library/" + name
	case !isDomain:
		name = "docker.io/" + name
	}
	r.repo = name
	if r.tag == "" && r.digest == "" {
		r.tag = "latest"
	}
	return r
}

// String is the normalized reference: repo:tag, or repo@digest when the
// reference names a digest (a tag beside a digest is dropped, as containerd
// resolves such a reference by its digest).
func (r imageRef) String() string {
	if r.digest != "" {
		return r.repo + "@" + r.digest
	}
	return r.repo + ":" + r.tag
}

// digestOf returns a "sha256:…" digest derived from the words given, for
// the IDs and manifest digests of images no RegistryImage describes.
func digestOf(words ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(words, "\x00")))
	return "sha256:" + hex.EncodeToString(sum[:])
}
