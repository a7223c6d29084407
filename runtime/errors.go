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
// ErrUnavailable, ErrDeadlineExceeded, ErrBackOff or ErrImagePullBackOff.
func IsRetryable(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, ErrDeadlineExceeded) || errors.Is(err, ErrBackOff) ||
		errors.Is(err, ErrImagePullBackOff)
}

// Reasons a container could not be started, as the kubelet names them: the
// text of each is the waiting reason its container status shows (a
// StartError carries one). Classify with errors.Is.
var (
	// ErrImagePull: pulling the image failed.
	ErrImagePull = errors.New("ErrImagePull")
	// ErrImagePullBackOff: an earlier pull of the image for the pod failed
	// and its back-off has not expired; no pull was tried.
	ErrImagePullBackOff = errors.New("ImagePullBackOff")
	// ErrImageNeverPull: the image is missing and its pull policy is Never.
	ErrImageNeverPull = errors.New("ErrImageNeverPull")
	// ErrInvalidImageName: the image is not a valid reference.
	ErrInvalidImageName = errors.New("InvalidImageName")
	// ErrImageInspect: the image's status could not be read.
	ErrImageInspect = errors.New("ImageInspectError")
	// ErrCreateContainerConfig: the container's configuration could not be
	// made (a runAsNonRoot refusal, a ConfigMap, Secret or key that does not
	// exist yet, a volume not ready); nothing was created.
	ErrCreateContainerConfig = errors.New("CreateContainerConfigError")
	// ErrCreateContainer: the runtime refused to create the container.
	ErrCreateContainer = errors.New("CreateContainerError")
	// ErrRunContainer: the runtime created the container but could not
	// start it.
	ErrRunContainer = errors.New("RunContainerError")
	// ErrPostStartHook: the container started but its postStart handler
	// failed, and it was killed.
	ErrPostStartHook = errors.New("PostStartHookError")
)

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

// StartError is a container start that failed, with the kubelet's reason
// and message: what the container's status shows (Waiting, Reason.Error(),
// Message) until a start succeeds. It Is both Reason (one of
// ErrImagePull, ErrImagePullBackOff, ErrImageNeverPull, ErrInvalidImageName,
// ErrImageInspect, ErrCreateContainerConfig, ErrCreateContainer,
// ErrRunContainer, ErrPostStartHook) and Err, the cause with its class
// (ErrUnknown, ErrFailedPrecondition, ...), which may be nil.
type StartError struct {
	Container string
	Reason    error
	Message   string
	Err       error
}

// Error is "REASON: MESSAGE".
func (e *StartError) Error() string {
	return e.ReasonText() + ": " + e.Message
}

// ReasonText is the waiting reason: Reason's text ("StartError" when
// Reason is nil).
func (e *StartError) ReasonText() string {
	if e.Reason == nil {
		return "StartError"
	}
	return e.Reason.Error()
}

// Unwrap returns Reason and Err.
func (e *StartError) Unwrap() []error {
	var out []error
	for _, x := range []error{e.Reason, e.Err} {
		if x != nil {
			out = append(out, x)
		}
	}
	return out
}

// BackOffs returns the container → message of every BackOffError in err's
// tree (errors.Join included).
func BackOffs(err error) map[string]string {
	out := map[string]string{}
	walkErrors(err, func(e error) bool {
		if b, ok := e.(*BackOffError); ok {
			out[b.Container] = b.Message
			return true
		}
		return false
	})
	return out
}

// StartFailures returns the container → StartError of every StartError in
// err's tree (errors.Join included); when a container has several, the
// first found wins.
func StartFailures(err error) map[string]*StartError {
	out := map[string]*StartError{}
	walkErrors(err, func(e error) bool {
		if s, ok := e.(*StartError); ok {
			if _, seen := out[s.Container]; !seen {
				out[s.Container] = s
			}
			return true
		}
		return false
	})
	return out
}

// walkErrors visits err's tree depth first; visit returns true to skip
// what e wraps.
func walkErrors(err error, visit func(error) bool) {
	if err == nil || visit(err) {
		return
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, x := range u.Unwrap() {
			walkErrors(x, visit)
		}
	case interface{ Unwrap() error }:
		walkErrors(u.Unwrap(), visit)
	}
}
