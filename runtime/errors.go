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
