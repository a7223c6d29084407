package cri

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Image references, checked as the kubelet checks them before a pull
// (its applyDefaultImageTag, through the Docker reference grammar): a
// name, lowercase, of slash-separated components, optionally behind a
// registry host and port, then an optional tag and an optional digest.
var (
	imageRefRegexp = regexp.MustCompile(`^` +
		// optional registry: host (domain name or [IPv6]) and port, then "/"
		`(?:(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?/)?` +
		// path components: lowercase alphanumerics joined by . _ __ or dashes
		`(?P<path>[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)` +
		// tag, digest
		`(?::[\w][\w.-]{0,127})?` +
		`(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`)
	hexIdentifierRegexp = regexp.MustCompile(`^[a-f0-9]{64}$`)

	errInvalidReference = errors.New("invalid reference format")
)

// maxImageNameLength bounds the name part of a reference, as Docker's.
const maxImageNameLength = 255

// checkImageName reports why image is not a valid image reference, with
// the kubelet's words ("couldn't parse image name "X": invalid reference
// format"), or nil.
func checkImageName(image string) error {
	if err := parseImageName(image); err != nil {
		return fmt.Errorf("couldn't parse image name %q: %w", image, err)
	}
	return nil
}

func parseImageName(image string) error {
	if image == "" {
		return errors.New("repository name must have at least one component")
	}
	if hexIdentifierRegexp.MatchString(image) {
		return fmt.Errorf("invalid repository name (%s), cannot specify 64-byte hexadecimal strings", image)
	}
	remote := image
	if i := strings.IndexByte(image, '/'); i >= 0 && (strings.ContainsAny(image[:i], ".:") || image[:i] == "localhost" || strings.ToLower(image[:i]) != image[:i]) {
		remote = image[i+1:] // after the registry
	}
	if i := strings.IndexAny(remote, ":@"); i >= 0 {
		remote = remote[:i]
	}
	if strings.ToLower(remote) != remote {
		return fmt.Errorf("%w: repository name (%s) must be lowercase", errInvalidReference, remote)
	}
	m := imageRefRegexp.FindStringSubmatchIndex(image)
	if m == nil {
		return errInvalidReference
	}
	if nameEnd := m[imageRefRegexp.SubexpIndex("path")*2+1]; nameEnd > maxImageNameLength {
		return fmt.Errorf("repository name must not be more than %d characters", maxImageNameLength)
	}
	return nil
}
