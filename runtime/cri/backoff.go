package cri

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// backOff is the per-container crash-loop back-off: after a restart at time
// t, the next restart may happen only once the container has been dead for
// the current delay; the delay doubles at every restart up to max and is
// forgotten after 2×max without restarts.
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
}

func newBackOff(c clock.Clock, initial, max time.Duration) *backOff {
	return &backOff{clock: c, initial: initial, max: max, byKey: map[string]backOffEntry{}}
}

// wait returns how long the container must still stay dead (0: restart now),
// counting from when it finished.
func (b *backOff) wait(key string, finishedAt time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	e, ok := b.byKey[key]
	if !ok || now.Sub(e.lastUpdate) > 2*b.max {
		return 0
	}
	if left := finishedAt.Add(e.delay).Sub(now); left > 0 {
		return left
	}
	return 0
}

// delay is the current delay of key (0 when none).
func (b *backOff) delay(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.byKey[key].delay
}

// next records a restart and grows the delay.
func (b *backOff) next(key string) {
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
	e.lastUpdate = now
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
