package source

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// waitTimeout bounds every wait for a condition; nothing sleeps.
const waitTimeout = 20 * time.Second

// consumer applies the PodUpdates of a Config to a model of the desired
// pods, the way an agent would.
type consumer struct {
	t       *testing.T
	cfg     *Config
	pods    map[types.UID]*v1.Pod
	history []PodUpdate
}

func newConsumer(t *testing.T, cfg *Config) *consumer {
	return &consumer{t: t, cfg: cfg, pods: map[types.UID]*v1.Pod{}}
}

func (c *consumer) apply(u PodUpdate) {
	c.history = append(c.history, u)
	for _, p := range u.Pods {
		if u.Op == REMOVE {
			delete(c.pods, p.UID)
		} else {
			c.pods[p.UID] = p
		}
	}
}

// names returns the sorted names of the model's pods.
func (c *consumer) names() []string {
	out := []string{}
	for _, p := range c.pods {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

func (c *consumer) byName(name string) *v1.Pod {
	for _, p := range c.pods {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// waitFor consumes updates until cond holds on the model.
func (c *consumer) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for !cond() {
		select {
		case u := <-c.cfg.Updates():
			c.apply(u)
		case <-deadline.C:
			c.t.Fatalf("timed out waiting for %s; model has %v", what, c.names())
		}
	}
}

// waitNames waits until the model holds exactly these pod names.
func (c *consumer) waitNames(want ...string) {
	c.t.Helper()
	sort.Strings(want)
	c.waitFor("pods "+join(want), func() bool { return equalStrings(c.names(), want) })
}

// drain applies every update already queued, without waiting.
func (c *consumer) drain() {
	for {
		select {
		case u := <-c.cfg.Updates():
			c.apply(u)
		default:
			return
		}
	}
}

// errorLog collects reported errors for an OnError option.
type errorLog struct {
	mu   sync.Mutex
	errs []error
	ch   chan struct{}
}

func newErrorLog() *errorLog { return &errorLog{ch: make(chan struct{}, 10000)} }

func (l *errorLog) onError(err error) {
	l.mu.Lock()
	l.errs = append(l.errs, err)
	l.mu.Unlock()
	l.ch <- struct{}{}
}

func (l *errorLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.errs)
}

// waitCount waits until at least n errors have been reported.
func (l *errorLog) waitCount(t *testing.T, n int) {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for l.count() < n {
		select {
		case <-l.ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %d errors, have %d", n, l.count())
		}
	}
}

// waitFor waits until an error matching target has been reported and
// returns it.
func (l *errorLog) waitFor(t *testing.T, target error) *Error {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		for _, err := range l.errs {
			var e *Error
			if errors.Is(err, target) && errors.As(err, &e) {
				l.mu.Unlock()
				return e
			}
		}
		l.mu.Unlock()
		select {
		case <-l.ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for an error matching %v", target)
		}
	}
}

// runSource runs fn in a goroutine owned by the test: it is cancelled and
// waited for at cleanup, and must return context.Canceled.
func runSource(t *testing.T, run func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	})
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return "[" + out + "]"
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}
