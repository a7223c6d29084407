package podworker

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// SyncKnownPods implements PodWorkers.
//
// One pass over desiredPods marks each desired pod's record with the call's
// epoch and reports it while its record is at hand; a second pass walks only
// the shards that may hold a record not marked by the first: one whose
// records were added or removed since the call began (shard.gen moved), or
// that has more records than were marked. That walk drives the orphans to
// termination, forgets finished ones and reports the rest, as well as the
// desired pods whose restart was requested. Each pod is reported as it was
// when its shard lock was held, as when every record was visited in the walk.
func (w *Workers) SyncKnownPods(desiredPods []*v1.Pod) map[types.UID]PodWorkerSync {
	w.knownMu.Lock()
	defer w.knownMu.Unlock()
	epoch := uint32(w.epoch.Add(1))
	// A record created after this point (createdEpoch == epoch) is newer than
	// the caller's view of what is desired and is not treated as an orphan by
	// this call.
	var gen [numShards]uint64
	var marked [numShards]int
	for i := range w.shards {
		sh := &w.shards[i]
		sh.mu.Lock()
		gen[i] = sh.gen
		sh.mu.Unlock()
	}
	known := make(map[types.UID]PodWorkerSync, w.count.Load())
	for _, pod := range desiredPods {
		if pod == nil {
			continue
		}
		i := w.shardIndex(pod.UID)
		sh := &w.shards[i]
		sh.mu.Lock()
		rec := sh.pods[pod.UID]
		if rec == nil || rec.desiredEpoch == epoch {
			sh.mu.Unlock()
			continue
		}
		rec.desiredEpoch = epoch
		if rec.m.IsRestartRequested() {
			// Left to the walk, which may forget it: not counted as marked,
			// so that its shard is walked.
			sh.mu.Unlock()
			continue
		}
		ws := rec.m.WorkerSync(false)
		marked[i]++
		sh.mu.Unlock()
		known[pod.UID] = ws
	}
	w.podsSynced.Store(true)
	now := w.clock.Now()
	var kicks []types.UID
	var toClose []chan<- struct{}
	for i := range w.shards {
		sh := &w.shards[i]
		sh.mu.Lock()
		if sh.gen == gen[i] && len(sh.pods) == marked[i] {
			sh.mu.Unlock()
			continue
		}
		for uid, rec := range sh.pods {
			desired := rec.desiredEpoch == epoch
			restart := rec.m.IsRestartRequested()
			if desired && !restart {
				if _, ok := known[uid]; ok {
					continue // reported by the first pass
				}
			}
			orphan := !desired && rec.createdEpoch != epoch
			if orphan || restart {
				if rec.m.IsFinished() {
					delete(sh.pods, uid)
					delete(known, uid)
					sh.gen++
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
						sh.gen++
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
