package cri

import (
	"fmt"
	"sync"
	"time"

	"github.com/podlife/podlife/runtime"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// backOff is the per-container crash-loop back-off: after a restart at time
// t, the next restart may happen only once the container has been dead for
// the current delay; the delay doubles at every restart up to max and is
// forgotten after 2×max without restarts. The image pull back-off is one
// too, keyed by pod and image, counted from the failed pull (leftAfter)
// and keeping the pull's error as the entry's note.
type backOff struct {
	clock    clock.Clock
	initial  time.Duration
	max      time.Duration
	mu       sync.Mutex
	byKey    map[string]backOffEntry
	lastSeen time.Time
}

type backOffEntry struct {
	delay      time.Duration
	lastUpdate time.Time
	note       string
}

func newBackOff(c clock.Clock, initial, max time.Duration) *backOff {
	return &backOff{clock: c, initial: initial, max: max, byKey: map[string]backOffEntry{}}
}

// backOffView is the read-only side of the back-off the planner consults:
// it records nothing and reads no clock.
type backOffView interface {
	// waitAt returns how long the container must still stay dead at now
	// (0: it may restart), counting from when it finished.
	waitAt(key string, finishedAt, now time.Time) time.Duration
}

// backOffKey names a container in the back-off.
func backOffKey(pod *v1.Pod, container string) string {
	return string(pod.UID) + "/" + container
}

// waitAt implements backOffView.
func (b *backOff) waitAt(key string, finishedAt, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.byKey[key]
	if !ok || now.Sub(e.lastUpdate) > 2*b.max {
		return 0
	}
	if left := finishedAt.Add(e.delay).Sub(now); left > 0 {
		return left
	}
	return 0
}

// leftAfter returns how much of the delay is left at now, counted from
// the last next (0: none), and the note recorded with it: the kubelet's
// IsInBackOffSinceUpdate.
func (b *backOff) leftAfter(key string, now time.Time) (time.Duration, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.byKey[key]
	if !ok || now.Sub(e.lastUpdate) > 2*b.max {
		return 0, ""
	}
	if left := e.lastUpdate.Add(e.delay).Sub(now); left > 0 {
		return left, e.note
	}
	return 0, ""
}

// next records a restart and grows the delay.
func (b *backOff) next(key string) {
	b.nextNoted(key, "")
}

// nextNoted is next, keeping note with the entry (until the next call).
func (b *backOff) nextNoted(key, note string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	e, ok := b.byKey[key]
	switch {
	case !ok || now.Sub(e.lastUpdate) > 2*b.max:
		e.delay = b.initial
	default:
		e.delay = min(2*e.delay, b.max)
	}
	e.lastUpdate, e.note = now, note
	b.byKey[key] = e
	b.gcLocked(now)
}

// gcLocked drops stale entries, at most once per max.
func (b *backOff) gcLocked(now time.Time) {
	if now.Sub(b.lastSeen) < b.max {
		return
	}
	b.lastSeen = now
	for k, e := range b.byKey {
		if now.Sub(e.lastUpdate) > 2*b.max {
			delete(b.byKey, k)
		}
	}
}

// backOffError is the error of a restart deferred by the back-off, with
// the kubelet's waiting message.
func backOffError(pod *v1.Pod, container string, wait time.Duration) error {
	return &runtime.BackOffError{Container: container, Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
		wait.Round(time.Second), container, pod.Name, pod.Namespace, pod.UID)}
}
