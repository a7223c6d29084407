package runtime

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Cache holds the newest observed PodStatus of every pod, as filled by a
// relister. The pod workers read it; a relister writes it.
//
// A miss is not an error: Get returns an empty status with only ID set, which
// counts as terminal (nothing runs).
type Cache interface {
	// Get returns the cached status of a pod and the error, if any, that the
	// last attempt to read it produced.
	Get(uid types.UID) (*PodStatus, error)
	// GetNewerThan waits until the cache holds data for the pod that is newer
	// than minTime (the entry was modified after minTime, or the whole cache
	// was refreshed after minTime) and returns it. It returns an error wrapping
	// ctx.Err() if ctx ends first; it never waits beyond ctx.
	GetNewerThan(ctx context.Context, uid types.UID, minTime time.Time) (*PodStatus, error)
	// Set stores the status (or the error) read from the runtime at
	// timestamp. It returns false, storing nothing, if the cache already holds
	// data for the pod that was read after timestamp.
	Set(uid types.UID, status *PodStatus, err error, timestamp time.Time) (updated bool)
	// Delete forgets a pod.
	Delete(uid types.UID)
	// UpdateTime records that the whole runtime was listed at timestamp: every
	// entry is at least that fresh.
	UpdateTime(timestamp time.Time)
}

// NewCache returns an empty in-memory Cache, safe for concurrent use.
func NewCache() *MemoryCache {
	return &MemoryCache{
		pods:    make(map[types.UID]cacheEntry),
		waiters: make(map[types.UID]map[*cacheWaiter]struct{}),
	}
}

// MemoryCache is the in-memory Cache. Waiters are kept per pod, so a Set wakes
// only the goroutines waiting for that pod.
type MemoryCache struct {
	mu        sync.Mutex
	pods      map[types.UID]cacheEntry
	timestamp time.Time // zero until the first UpdateTime
	// listed and pending: the last UpdateTimeExcept newer than timestamp,
	// every pod but the pending ones as fresh as listed.
	listed  time.Time
	pending map[types.UID]struct{}
	waiters map[types.UID]map[*cacheWaiter]struct{}
	onWait  func()
}

// ListingCache is a Cache that can take a listing's time before the pods
// the listing found changed have been read: the Relister calls
// UpdateTimeExcept with them (pending) once it has compared a listing with
// the one before, and UpdateTime once it has read them all. Every other
// pod is then as fresh as the listing, so that a pod worker waiting for one
// of them need not wait for the reads of the changed pods, which take
// seconds on a loaded node with many pods. The MemoryCache is one.
type ListingCache interface {
	Cache
	// UpdateTimeExcept records that the runtime was listed at timestamp
	// and that every entry but those of the pending pods is at least that
	// fresh. pending must not change afterwards.
	UpdateTimeExcept(timestamp time.Time, pending map[types.UID]struct{})
}

// OnWait sets f, which the cache calls (without its lock held) each time a
// GetNewerThan call finds nothing new enough and begins to wait, so that
// whoever fills the cache can do it sooner than planned: the agent passes
// its Relister's Kick. f must return quickly. nil (the default) removes it.
func (c *MemoryCache) OnWait(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onWait = f
}

var _ ListingCache = (*MemoryCache)(nil)

type cacheEntry struct {
	status   *PodStatus
	err      error
	modified time.Time
}

type cacheWaiter struct {
	minTime time.Time
	ready   chan struct{}
}

// Get implements Cache.
func (c *MemoryCache) Get(uid types.UID) (*PodStatus, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.getLocked(uid)
}

func (c *MemoryCache) getLocked(uid types.UID) (*PodStatus, error) {
	e, ok := c.pods[uid]
	if !ok {
		return &PodStatus{ID: uid}, nil
	}
	return e.status, e.err
}

func (c *MemoryCache) newerLocked(uid types.UID, minTime time.Time) bool {
	if !c.timestamp.IsZero() && c.timestamp.After(minTime) {
		return true
	}
	if !c.listed.IsZero() && c.listed.After(minTime) {
		if _, pending := c.pending[uid]; !pending {
			return true
		}
	}
	e, ok := c.pods[uid]
	return ok && e.modified.After(minTime)
}

// GetNewerThan implements Cache.
func (c *MemoryCache) GetNewerThan(ctx context.Context, uid types.UID, minTime time.Time) (*PodStatus, error) {
	c.mu.Lock()
	if c.newerLocked(uid, minTime) {
		defer c.mu.Unlock()
		return c.getLocked(uid)
	}
	w := &cacheWaiter{minTime: minTime, ready: make(chan struct{})}
	set := c.waiters[uid]
	if set == nil {
		set = make(map[*cacheWaiter]struct{})
		c.waiters[uid] = set
	}
	set[w] = struct{}{}
	onWait := c.onWait
	c.mu.Unlock()
	if onWait != nil {
		onWait()
	}

	select {
	case <-w.ready:
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.getLocked(uid)
	case <-ctx.Done():
		c.mu.Lock()
		c.removeWaiterLocked(uid, w)
		c.mu.Unlock()
		return nil, fmt.Errorf("wait for status of pod %s newer than %s: %w", uid, minTime.Format(time.RFC3339Nano), ctx.Err())
	}
}

func (c *MemoryCache) removeWaiterLocked(uid types.UID, w *cacheWaiter) {
	set := c.waiters[uid]
	delete(set, w)
	if len(set) == 0 {
		delete(c.waiters, uid)
	}
}

// Set implements Cache.
func (c *MemoryCache) Set(uid types.UID, status *PodStatus, err error, timestamp time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[uid]; ok && e.modified.After(timestamp) {
		return false
	}
	if status == nil {
		status = &PodStatus{ID: uid}
	}
	c.pods[uid] = cacheEntry{status: status, err: err, modified: timestamp}
	c.notifyLocked(uid, timestamp)
	return true
}

// Delete implements Cache.
func (c *MemoryCache) Delete(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pods, uid)
}

// UpdateTime implements Cache.
func (c *MemoryCache) UpdateTime(timestamp time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if timestamp.After(c.timestamp) {
		c.timestamp = timestamp
	}
	if !c.listed.After(c.timestamp) {
		c.listed, c.pending = time.Time{}, nil
	}
	for uid := range c.waiters {
		c.notifyLocked(uid, c.timestamp)
	}
}

// UpdateTimeExcept implements ListingCache. A timestamp no newer than
// the last UpdateTime's or UpdateTimeExcept's changes nothing.
func (c *MemoryCache) UpdateTimeExcept(timestamp time.Time, pending map[types.UID]struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !timestamp.After(c.timestamp) || !timestamp.After(c.listed) {
		return
	}
	c.listed, c.pending = timestamp, pending
	for uid := range c.waiters {
		if _, p := pending[uid]; !p {
			c.notifyLocked(uid, timestamp)
		}
	}
}

// notifyLocked wakes the waiters of uid whose minTime is before t.
func (c *MemoryCache) notifyLocked(uid types.UID, t time.Time) {
	for w := range c.waiters[uid] {
		if t.After(w.minTime) {
			close(w.ready)
			c.removeWaiterLocked(uid, w)
		}
	}
}

// Len returns the number of pods with an entry.
func (c *MemoryCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pods)
}
