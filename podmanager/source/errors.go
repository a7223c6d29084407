package source

import (
	"errors"
	"fmt"
)

// Classes of rejected input; match them with errors.Is.
var (
	// ErrDecode: the manifest is not valid YAML or JSON, or is too large.
	ErrDecode = errors.New("manifest does not decode")
	// ErrNotPod: the manifest decodes but is not a v1 Pod (or, over HTTP, a
	// v1 PodList).
	ErrNotPod = errors.New("manifest is not a v1 Pod")
	// ErrInvalidPod: the pod fails validation (name, namespace, containers).
	ErrInvalidPod = errors.New("invalid pod")
	// ErrDuplicateFullName: two pods of one snapshot share name_namespace;
	// the later one is dropped.
	ErrDuplicateFullName = errors.New("duplicate pod full name")
	// ErrFetch: a source could not read its input (folder, URL, API).
	ErrFetch = errors.New("source read failed")
)

// Error is one rejected input. Every source and the Config report them
// through their OnError option and count them (Errors()).
type Error struct {
	// Source is the source name ("file", "http", "api", ...).
	Source string
	// Origin says where the input came from: a file path, a URL, or a pod
	// full name.
	Origin string
	// Err is the reason; it wraps one of the Err* classes above.
	Err error
}

func (e *Error) Error() string {
	if e.Origin == "" {
		return fmt.Sprintf("source %s: %v", e.Source, e.Err)
	}
	return fmt.Sprintf("source %s: %s: %v", e.Source, e.Origin, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// errorf returns an error that wraps class and reads "class: details".
func errorf(class error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", class, fmt.Sprintf(format, args...))
}
