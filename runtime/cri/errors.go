package cri

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/podlife/podlife/runtime"
)

// fromGRPC is the one place where gRPC status codes become runtime errors.
// The result Is both the runtime sentinel and the original error.
func fromGRPC(err error) error {
	if err == nil {
		return nil
	}
	var class error
	if st, ok := status.FromError(err); ok {
		class = classOf(st.Code())
	} else {
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			class = runtime.ErrDeadlineExceeded
		case errors.Is(err, context.Canceled):
			class = runtime.ErrCanceled
		default:
			class = runtime.ErrUnknown
		}
	}
	return fmt.Errorf("%w: %w", class, err)
}

func classOf(c codes.Code) error {
	switch c {
	case codes.NotFound:
		return runtime.ErrNotFound
	case codes.AlreadyExists:
		return runtime.ErrAlreadyExists
	case codes.Unavailable:
		return runtime.ErrUnavailable
	case codes.DeadlineExceeded:
		return runtime.ErrDeadlineExceeded
	case codes.Canceled:
		return runtime.ErrCanceled
	case codes.InvalidArgument, codes.OutOfRange:
		return runtime.ErrInvalidArgument
	case codes.FailedPrecondition, codes.Aborted:
		return runtime.ErrFailedPrecondition
	case codes.Unimplemented:
		return runtime.ErrUnimplemented
	default:
		return runtime.ErrUnknown
	}
}

// classified is cause, classified as class: errors.Is finds both, and its
// text is cause's alone (a message for the container's status, without
// the class's words).
type classified struct{ class, cause error }

func (e *classified) Error() string   { return e.cause.Error() }
func (e *classified) Unwrap() []error { return []error{e.class, e.cause} }

// failedPrecondition classifies err as runtime.ErrFailedPrecondition,
// keeping its text.
func failedPrecondition(err error) error {
	if err == nil || errors.Is(err, runtime.ErrFailedPrecondition) {
		return err
	}
	return &classified{class: runtime.ErrFailedPrecondition, cause: err}
}

// ignoreNotFound treats "not found" as done (stopping or removing something
// that vanished).
func ignoreNotFound(err error) error {
	if errors.Is(err, runtime.ErrNotFound) {
		return nil
	}
	return err
}
