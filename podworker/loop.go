package podworker

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
)

// spawnLocked starts the pod's work loop unless it runs already or Workers
// is not running. The pod's shard lock must be held.
func (w *Workers) spawnLocked(uid types.UID, rec *podRecord) {
	if rec.running || w.state.Load() != stateRunning {
		return
	}
	rec.running = true
	t := podTask{uid: uid, rec: rec}
	select {
	case w.handoff <- t:
		return
	default:
	}
	w.poolMu.Lock()
	if w.starting >= w.maxStarting {
		w.ready = append(w.ready, t)
		w.poolMu.Unlock()
		return
	}
	w.starting++
	w.poolMu.Unlock()
	w.wg.Add(1)
	go w.podGoroutine(t)
}

// podTask is a pod whose work loop is to run.
type podTask struct {
	uid types.UID
	rec *podRecord
}

// popReadyLocked takes the oldest ready pod. poolMu must be held.
func (w *Workers) popReadyLocked() (podTask, bool) {
	if w.readyHead == len(w.ready) {
		return podTask{}, false
	}
	t := w.ready[w.readyHead]
	w.ready[w.readyHead] = podTask{}
	w.readyHead++
	if w.readyHead == len(w.ready) {
		w.ready, w.readyHead = nil, 0 // a burst's queue is not kept
	}
	return t, true
}

// podGoroutine runs pods' work loops: first t, then ready pods, then,
// parked, pods handed to it.
func (w *Workers) podGoroutine(t podTask) {
	defer w.wg.Done()
	w.poolMu.Lock()
	w.starting--
	if next, ok := w.popReadyLocked(); ok {
		// Whatever t's Syncer does, next gets a goroutine of its own.
		w.starting++
		w.wg.Add(1)
		go w.podGoroutine(next)
	}
	w.poolMu.Unlock()
	for {
		w.podLoop(t.uid, t.rec)
		w.poolMu.Lock()
		next, ok := w.popReadyLocked()
		w.poolMu.Unlock()
		if ok {
			t = next
			continue
		}
		t = podTask{} // do not keep a finished pod alive while parked
		if w.parked.Add(1) > w.maxParked {
			w.parked.Add(-1)
			return
		}
		select {
		case t = <-w.handoff:
			w.parked.Add(-1)
		case <-w.stopCh:
			w.parked.Add(-1)
			return
		}
	}
}

// kick delivers the last update of a pod that may now start.
func (w *Workers) kick(uid types.UID) {
	if uid == "" {
		return
	}
	sh := w.shardFor(uid)
	sh.mu.Lock()
	if rec := sh.pods[uid]; rec != nil {
		if eff := rec.m.Due(); eff.Notify {
			w.spawnLocked(uid, rec)
		}
	}
	sh.mu.Unlock()
}

// staticEffectsLocked applies the static-name effects of eff and returns the
// waiter to kick once the shard lock is released.
func (w *Workers) staticEffectsLocked(rec *podRecord, eff Effects) (next types.UID) {
	if !rec.m.Static() || (!eff.WithdrawStatic && !eff.ReleaseStatic) {
		return ""
	}
	w.staticMu.Lock()
	defer w.staticMu.Unlock()
	if eff.WithdrawStatic {
		return w.static.withdraw(rec.m.FullName(), rec.m.UID())
	}
	return w.static.release(rec.m.FullName(), rec.m.UID())
}

// releaseCtxLocked cancels the pod's sync context, freeing it. The work loop
// that owns the context sees rec.cancel gone and makes a new one for its next
// Syncer call.
func (rec *podRecord) releaseCtxLocked() {
	if rec.cancel != nil {
		rec.cancel()
		rec.cancel = nil
	}
}

// podLoop runs a pod's work until nothing is pending.
func (w *Workers) podLoop(uid types.UID, rec *podRecord) {
	sh := w.shardFor(uid)
	var ctx context.Context // valid while rec.cancel is the one made with it
	for {
		now := w.clock.Now()
		sh.mu.Lock()
		if sh.pods[uid] != rec {
			sh.mu.Unlock()
			return
		}
		if w.state.Load() != stateRunning {
			rec.running = false
			rec.releaseCtxLocked()
			sh.mu.Unlock()
			return
		}
		decision := StartAllowed
		if rec.m.NeedsStartDecision() && rec.m.Static() && !rec.m.IsTerminationRequested() {
			w.staticMu.Lock()
			if !w.static.tryStart(rec.m.FullName(), uid) {
				decision = StartNotYet
			}
			w.staticMu.Unlock()
		}
		work, ok, eff, err := rec.m.Next(now, decision)
		if err != nil {
			w.log.Error(err, "pod state machine refused to start work", "podUID", uid)
		}
		if !ok {
			rec.running = false
			rec.releaseCtxLocked()
			next := w.staticEffectsLocked(rec, eff)
			if eff.Finished {
				rec.dueAt = 0
			}
			if eff.Waiting {
				// The full name's holder kicks us when it finishes; this is
				// only a safety net.
				w.scheduleLocked(uid, rec, now, w.delay(RequeueBackOff, 1, nil))
			}
			_, _, terminatingAt, _ := rec.m.Times()
			sh.mu.Unlock()
			closeAll(eff.Close)
			if eff.Finished {
				w.observeFinished(uid, now, terminatingAt)
			}
			w.kick(next)
			return
		}
		if rec.cancel == nil {
			ctx, rec.cancel = context.WithCancel(w.baseCtx)
		}
		lastSync := rec.lastSyncTime.Time()
		sh.mu.Unlock()

		if eff.Started && w.metrics != nil && work.Pod != nil {
			w.metrics.ObserveContainersPerPod(len(work.Pod.Spec.Containers))
		}
		isTerminal, syncErr := w.execute(ctx, uid, work, lastSync)
		done := w.clock.Now()
		if syncErr != nil {
			if errors.Is(syncErr, context.Canceled) {
				w.log.V(2).Info("pod sync cancelled", "podUID", uid, "work", work.Kind.String())
			} else {
				w.log.Error(syncErr, "pod sync failed, will retry", "pod", podRef(work.Pod), "podUID", uid, "work", work.Kind.String())
			}
		}
		if w.metrics != nil && !work.StartTime.IsZero() {
			w.metrics.ObservePodWorkerDuration(work.UpdateType.String(), done.Sub(work.StartTime))
		}

		sh.mu.Lock()
		if sh.pods[uid] != rec {
			sh.mu.Unlock()
			return
		}
		rec.lastSyncTime = stamp(done)
		eff, err = rec.m.Complete(done, isTerminal, syncErr)
		if err != nil {
			w.log.Error(err, "pod state machine refused a result", "podUID", uid, "work", work.Kind.String())
		}
		if eff.Requeue != RequeueNone {
			w.scheduleLocked(uid, rec, done, w.delay(eff.Requeue, rec.m.Failures(), syncErr))
		}
		if eff.Forget {
			delete(sh.pods, uid)
			sh.gen++
			w.count.Add(-1)
		}
		if eff.Finished {
			rec.dueAt = 0 // nothing is ever re-delivered to a finished pod
		}
		next := w.staticEffectsLocked(rec, eff)
		stop := eff.Forget || eff.Finished || !rec.m.HasPending()
		if stop {
			rec.running = false
			rec.releaseCtxLocked()
		}
		_, _, terminatingAt, _ := rec.m.Times()
		sh.mu.Unlock()

		closeAll(eff.Close)
		if eff.Finished {
			w.observeFinished(uid, done, terminatingAt)
		}
		w.kick(next)
		if stop {
			return
		}
	}
}

func (w *Workers) observeFinished(uid types.UID, now, terminatingAt time.Time) {
	w.log.V(2).Info("pod finished", "podUID", uid)
	if w.metrics != nil && !terminatingAt.IsZero() {
		w.metrics.ObservePodWorkerDuration("terminated", now.Sub(terminatingAt))
	}
}

// execute makes one Syncer call. A panicking Syncer is turned into an error
// (and retried), so one bad pod cannot take the agent down.
func (w *Workers) execute(ctx context.Context, uid types.UID, work Work, lastSync time.Time) (isTerminal bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s panicked: %v", work.Kind, r)
		}
	}()
	if work.Kind == WorkTerminatingRuntimePod {
		return false, w.syncer.SyncTerminatingRuntimePod(ctx, work.RunningPod)
	}
	status, err := w.podStatus(ctx, uid, work.Pod, lastSync)
	if err != nil {
		return false, err
	}
	switch work.Kind {
	case WorkSyncPod:
		return w.syncer.SyncPod(ctx, work.UpdateType, work.Pod, work.MirrorPod, status)
	case WorkTerminatingPod:
		gp := work.GracePeriod
		return false, w.syncer.SyncTerminatingPod(ctx, work.Pod, status, &gp, work.StatusFunc)
	case WorkTerminatedPod:
		return false, w.syncer.SyncTerminatedPod(ctx, work.Pod, status)
	default:
		return false, fmt.Errorf("unknown work kind %d", work.Kind)
	}
}

// podStatus returns the status to hand the Syncer: from the Cache, newer
// than the previous sync, when there is one.
func (w *Workers) podStatus(ctx context.Context, uid types.UID, pod *v1.Pod, lastSync time.Time) (*runtime.PodStatus, error) {
	if w.cache == nil {
		return &runtime.PodStatus{ID: uid, Name: pod.Name, Namespace: pod.Namespace}, nil
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer w.afterFunc(w.opts.StatusWaitTimeout, cancel)()
	st, err := w.cache.GetNewerThan(wctx, uid, lastSync)
	if err != nil {
		if ctx.Err() == nil && wctx.Err() != nil {
			return nil, fmt.Errorf("determine status of pod %s: none newer than %s within %s: %w", uid, lastSync.Format(time.RFC3339Nano), w.opts.StatusWaitTimeout, ErrStatusWaitTimeout)
		}
		return nil, fmt.Errorf("determine status of pod %s: %w", uid, err)
	}
	return st, nil
}
