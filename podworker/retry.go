package podworker

import (
	"errors"
	"fmt"
	"time"
)

// ErrStatusWaitTimeout is the error of a sync attempt that found no status in
// the Cache newer than the previous sync within Options.StatusWaitTimeout.
var ErrStatusWaitTimeout = errors.New("timed out waiting for a newer pod status")

// retryAfterError is an error that knows when it should be retried.
type retryAfterError interface {
	error
	RetryAfter() time.Duration
}

// RetryAfter wraps err so that the pod worker retries the failed Syncer call
// after d (jittered, at most ResyncInterval) instead of after its backoff.
// Use it for errors whose cause has a known horizon, such as "network not
// ready" (retry soon) or a crash-loop backoff (retry when it expires).
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryAfter{err: err, after: d}
}

type retryAfter struct {
	err   error
	after time.Duration
}

func (e *retryAfter) Error() string             { return fmt.Sprintf("%v (retry after %s)", e.err, e.after) }
func (e *retryAfter) Unwrap() error             { return e.err }
func (e *retryAfter) RetryAfter() time.Duration { return e.after }
