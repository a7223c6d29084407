package podworkertest

import (
	"testing"
	"time"
)

// DefaultTimeout bounds WaitFor when no timeout is given.
const DefaultTimeout = 10 * time.Second

// WaitFor polls cond until it is true, failing the test with what if it is
// still false after timeout (DefaultTimeout when zero). It is for waiting on
// other goroutines; time inside the code under test should come from a fake
// clock that the test steps.
func WaitFor(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	if err := Poll(timeout, cond); err != nil {
		tb.Fatalf("timed out waiting for %s", what)
	}
}

// Poll polls cond until it is true or timeout (DefaultTimeout when zero)
// passes, and returns an error in the latter case.
func Poll(timeout time.Duration, cond func() bool) error {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	deadline := time.Now().Add(timeout)
	interval := 50 * time.Microsecond
	for {
		if cond() {
			return nil
		}
		if time.Now().After(deadline) {
			return errTimeout
		}
		time.Sleep(interval)
		if interval < 5*time.Millisecond {
			interval *= 2
		}
	}
}

type timeoutError struct{}

func (timeoutError) Error() string { return "condition not met before the deadline" }

var errTimeout error = timeoutError{}
