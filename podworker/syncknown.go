package podworker

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// SyncKnownPods implements PodWorkers.
func (w *Workers) SyncKnownPods(desiredPods []*v1.Pod) map[types.UID]PodWorkerSync {
	w.knownMu.Lock()
	defer w.knownMu.Unlock()
	epoch := uint32(w.epoch.Add(1))
	// Mark the records of desired pods. A record created after this point
	// (createdEpoch == epoch) is newer than the caller's view of what is
	// desired and is not treated as an orphan by this call.
	for _, pod := range desiredPods {
		if pod == nil {
			continue
		}
		sh := w.shardFor(pod.UID)
		sh.mu.Lock()
		if rec := sh.pods[pod.UID]; rec != nil {
			rec.desiredEpoch = epoch
		}
		sh.mu.Unlock()
	}
	w.podsSynced.Store(true)
	now := w.clock.Now()
	known := make(map[types.UID]PodWorkerSync, w.count.Load())
	var kicks []types.UID
	var toClose []chan<- struct{}
	for i := range w.shards {
		sh := &w.shards[i]
		sh.mu.Lock()
		for uid, rec := range sh.pods {
			orphan := rec.desiredEpoch != epoch && rec.createdEpoch != epoch
			if orphan || rec.m.IsRestartRequested() {
				if rec.m.IsFinished() {
					delete(sh.pods, uid)
					w.count.Add(-1)
					continue
				}
				if orphan {
					eff := rec.m.Orphan(now)
					toClose = append(toClose, eff.Close...)
					if next := w.staticEffectsLocked(rec, eff); next != "" {
						kicks = append(kicks, next)
					}
					if eff.Forget {
						delete(sh.pods, uid)
						w.count.Add(-1)
						rec.releaseCtxLocked()
						continue
					}
					if eff.CancelSync {
						rec.releaseCtxLocked()
					}
					if eff.Notify {
						w.spawnLocked(uid, rec)
					}
				}
			}
			known[uid] = rec.m.WorkerSync(orphan)
		}
		sh.mu.Unlock()
	}
	closeAll(toClose)
	for _, uid := range kicks {
		w.kick(uid)
	}
	return known
}
