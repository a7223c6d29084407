package agent

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
)

// workerCache is the Cache the pod workers read: the agent's MemoryCache,
// plus the status that each pod's terminating sync read after its kill,
// handed to the terminated sync that follows.
//
// A pod worker waits, before each sync, for a status newer than the end of
// its previous sync (Cache.GetNewerThan), as the kubelet's does. Before the
// terminated sync that means a relist that began after the kill ended: up to
// two whole relists, which take seconds on a loaded node with many pods
// (docs/benchmarks.md, "The drain moves in relist waves"). Yet the
// terminating sync has just read the pod's status from the runtime after its
// kill and checked that nothing runs any more: the kubelet's
// syncTerminatingPod reads the same status, with "TODO: have KillPod return
// the terminal status of stopped containers and write that into the cache
// immediately", and the pod worker's wait carries "TODO: this adds ~1s of
// latency on all transitions from sync to terminating to terminated". This
// does what those TODOs ask: the stopped status is written into the cache
// (at the time its read began, which is all the cache can claim of it) and
// kept for the terminated sync, which gets it without waiting. Nothing can
// make it stale before then: the pod worker, the only one that starts the
// pod's containers, has stopped them for good; garbage collection may
// remove an exited container meanwhile, and the status then keeps its exit
// code, which the relist's would have lost.
//
// The stopped status serves one terminated sync: SyncTerminatedPod drops it
// when it begins, so that a retry (after a failed volume tear-down, say),
// which may follow a partial removal of the pod's containers, waits for the
// relister again. A pod forgotten without a terminated sync drops it in
// housekeeping (forgetFinished).
type workerCache struct {
	*runtime.MemoryCache

	mu      sync.Mutex
	stopped map[types.UID]*runtime.PodStatus
}

func newWorkerCache(c *runtime.MemoryCache) *workerCache {
	return &workerCache{MemoryCache: c, stopped: map[types.UID]*runtime.PodStatus{}}
}

var _ runtime.Cache = (*workerCache)(nil)

// GetNewerThan implements runtime.Cache: the stopped status of a pod whose
// terminating sync ended, whatever minTime, else the MemoryCache's answer.
func (c *workerCache) GetNewerThan(ctx context.Context, uid types.UID, minTime time.Time) (*runtime.PodStatus, error) {
	c.mu.Lock()
	st, ok := c.stopped[uid]
	c.mu.Unlock()
	if ok {
		return st, nil
	}
	return c.MemoryCache.GetNewerThan(ctx, uid, minTime)
}

// setStopped stores st, read from the runtime at ts after the pod's kill,
// in the cache and keeps it for the pod's terminated sync.
func (c *workerCache) setStopped(uid types.UID, st *runtime.PodStatus, ts time.Time) {
	c.MemoryCache.Set(uid, st, nil, ts)
	c.mu.Lock()
	c.stopped[uid] = st
	c.mu.Unlock()
}

// forgetStopped drops the stopped status of a pod, if it has one.
func (c *workerCache) forgetStopped(uid types.UID) {
	c.mu.Lock()
	delete(c.stopped, uid)
	c.mu.Unlock()
}

// stoppedUIDs returns the pods that have a stopped status kept.
func (c *workerCache) stoppedUIDs() []types.UID {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]types.UID, 0, len(c.stopped))
	for uid := range c.stopped {
		out = append(out, uid)
	}
	return out
}
