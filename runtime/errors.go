package runtime

import "errors"

// Errors a Runtime returns, classified with errors.Is. An implementation wraps
// one of them together with its own, more detailed error, for example
//
//	fmt.Errorf("stop container %q: %w", id, errors.Join(runtime.ErrNotFound, grpcErr))
//
// so that callers can test the class without parsing messages.
var (
	// ErrNotFound: the pod, sandbox, container or image does not exist.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: the object to create exists already.
	ErrAlreadyExists = errors.New("already exists")
	// ErrUnavailable: the runtime cannot be reached (down, restarting, socket
	// missing). Retrying later may succeed.
	ErrUnavailable = errors.New("runtime unavailable")
	// ErrDeadlineExceeded: the call took longer than its timeout.
	ErrDeadlineExceeded = errors.New("deadline exceeded")
	// ErrCanceled: the caller's context was cancelled.
	ErrCanceled = errors.New("canceled")
	// ErrInvalidArgument: the request was malformed (a missing image, a
	// duplicate container name, a bad endpoint).
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrFailedPrecondition: the object is not in a state that allows the
	// operation (for example removing a running sandbox).
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrUnimplemented: the runtime does not implement the call or the CRI
	// version podlife speaks.
	ErrUnimplemented = errors.New("unimplemented")
	// ErrBackOff: a container is in crash-loop back-off and was not restarted
	// this time. SyncPod returns it (wrapped) so that the caller retries later.
	ErrBackOff = errors.New("back-off restarting container")
	// ErrUnknown: any other runtime failure.
	ErrUnknown = errors.New("runtime error")
)

// IsRetryable reports whether err is of a class that may go away by itself:
// ErrUnavailable, ErrDeadlineExceeded or ErrBackOff.
func IsRetryable(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, ErrDeadlineExceeded) || errors.Is(err, ErrBackOff)
}

// BackOffError is a container restart that the crash-loop back-off
// deferred. It wraps ErrBackOff; Message is the kubelet's waiting message
// for the container's status ("back-off 20s restarting failed
// container=NAME pod=NAME_NAMESPACE(UID)").
type BackOffError struct {
	Container string
	Message   string
}

func (e *BackOffError) Error() string { return e.Message }

// Unwrap returns ErrBackOff.
func (e *BackOffError) Unwrap() error { return ErrBackOff }

// BackOffs returns the container → message of every BackOffError in err's
// tree (errors.Join included).
func BackOffs(err error) map[string]string {
	out := map[string]string{}
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if b, ok := e.(*BackOffError); ok {
			out[b.Container] = b.Message
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}
