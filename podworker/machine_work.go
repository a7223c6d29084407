package podworker

import (
	"fmt"
	"math"
	"time"
)

// NeedsStartDecision reports whether the next call to Next will consult its
// StartDecision: the pod has pending work and has not started yet.
func (m *Machine) NeedsStartDecision() bool {
	return m.hasPending && !m.started && m.pending.pod != nil && m.lifecycle != LifecycleFinished
}

// Next consumes the pending update and returns the Syncer call to make
// (the kubelet's startPodSync, §2.4). ok is false when there is nothing to do
// now: nothing pending, the pod may not start yet (Effects.Waiting), or it
// never will (a static pod killed while waiting finishes here with no Syncer
// call).
func (m *Machine) Next(now time.Time, decision StartDecision) (w Work, ok bool, eff Effects, err error) {
	if m.inFlight {
		return w, false, eff, ErrInFlight
	}
	if !m.hasPending || m.lifecycle == LifecycleFinished {
		return w, false, eff, nil
	}
	if !m.started && m.pending.pod != nil {
		switch {
		case m.static && m.IsTerminationRequested():
			// Never started, never will: finish without any Syncer call.
			m.clearPending()
			if t := m.term(); t.terminatedAt == 0 {
				t.terminatedAt = stamp(now)
			}
			m.lifecycle = LifecycleFinished
			eff.Close = m.takeCompleted()
			eff.Finished, eff.WithdrawStatic = true, true
			return w, false, eff, nil
		case decision == StartNotYet:
			eff.Waiting = true
			return w, false, eff, nil
		default:
			m.started, m.startedAt = true, stamp(now)
			eff.Started = true
		}
	}

	u, ut, static := m.pending, SyncPodType(m.pendingType), m.pendingStatic
	m.clearPending()
	m.mergeActive(u, static)

	w = Work{
		UpdateType: ut,
		StartTime:  u.startTime.Time(),
		Pod:        m.active.pod,
		MirrorPod:  m.active.mirrorPod,
		RunningPod: m.active.runningPod,
	}
	switch m.lifecycle {
	case LifecycleWaiting, LifecycleSyncing:
		m.lifecycle = LifecycleSyncing
		w.Kind = WorkSyncPod
	case LifecycleTerminating:
		m.startedTerminating = true
		t := m.term()
		if t.gracePeriod == 0 {
			t.gracePeriod, _ = EffectiveGracePeriod(0, m.active.pod, nil)
		}
		w.GracePeriod = t.gracePeriod
		if m.active.pod == nil {
			w.Kind = WorkTerminatingRuntimePod
		} else {
			w.Kind = WorkTerminatingPod
			w.StatusFunc = t.statusFn
		}
	case LifecycleTerminated:
		w.Kind = WorkTerminatedPod
	}
	m.inFlight, m.inFlightKind = true, w.Kind
	return w, true, eff, nil
}

// mergeActive folds a consumed update into the active one (the kubelet's
// mergeLastUpdate): a runtime-only update never replaces a known spec. An
// update with a spec states the current mirror pod, nil meaning there is
// none (the kubelet keeps the last one, so a SyncPod after the mirror was
// deleted in the API still sees it and does not recreate it); replays carry
// the active one.
func (m *Machine) mergeActive(u update, static bool) {
	if u.pod != nil || !m.hasActive {
		m.active.pod, m.activeStatic = u.pod, static
		m.active.mirrorPod = u.mirrorPod
	}
	m.active.runningPod = u.runningPod
	m.hasActive = true
}

// requeueLast makes the active update pending again, as a plain sync, unless
// something newer is pending.
func (m *Machine) requeueLast() {
	if m.hasPending || !m.hasActive {
		return
	}
	m.pending = update{specs: m.active}
	m.pendingType, m.pendingStatic = uint8(SyncPodSync), m.activeStatic
	m.hasPending = true
}

// clearPending drops the pending update.
func (m *Machine) clearPending() {
	m.hasPending, m.pending = false, update{}
	m.pendingType, m.pendingStatic = 0, false
}

// Complete records the result of the Work returned by the last Next.
// isTerminal is SyncPod's result and is ignored for other work.
func (m *Machine) Complete(now time.Time, isTerminal bool, syncErr error) (Effects, error) {
	var eff Effects
	if !m.inFlight {
		return eff, ErrNotInFlight
	}
	m.inFlight = false
	kind := m.inFlightKind
	if syncErr != nil {
		// A failed call never changes state; the same kind of work is
		// retried with backoff, or at once if something newer is pending.
		if m.failures < math.MaxInt32 {
			m.failures++
		}
		eff.Requeue = RequeueBackOff
		eff.Notify = m.hasPending
		return eff, nil
	}
	m.failures = 0
	switch kind {
	case WorkSyncPod:
		switch {
		case m.lifecycle != LifecycleSyncing:
			// Termination was requested while SyncPod ran; it is pending.
		case isTerminal:
			t := m.term()
			t.terminatingAt = stamp(now)
			m.lifecycle = LifecycleTerminating
			m.startedTerminating = true
			t.gracePeriod, _ = EffectiveGracePeriod(t.gracePeriod, m.active.pod, nil)
			m.requeueLast()
		default:
			eff.Requeue = RequeueResync
		}
	case WorkTerminatingPod:
		if m.lifecycle != LifecycleTerminating {
			return eff, fmt.Errorf("%w: %s succeeded in lifecycle %s", ErrIllegalResult, kind, m.lifecycle)
		}
		m.term().terminatedAt = stamp(now)
		m.lifecycle = LifecycleTerminated
		eff.Close = m.takeCompleted()
		m.requeueLast()
	case WorkTerminatingRuntimePod:
		if m.lifecycle != LifecycleTerminating {
			return eff, fmt.Errorf("%w: %s succeeded in lifecycle %s", ErrIllegalResult, kind, m.lifecycle)
		}
		m.term().terminatedAt = stamp(now)
		m.lifecycle = LifecycleFinished
		m.clearPending()
		eff.Close = m.takeCompleted()
		eff.Finished, eff.Forget = true, true
		return eff, nil
	case WorkTerminatedPod:
		if m.lifecycle != LifecycleTerminated {
			return eff, fmt.Errorf("%w: %s succeeded in lifecycle %s", ErrIllegalResult, kind, m.lifecycle)
		}
		m.lifecycle = LifecycleFinished
		m.clearPending()
		eff.Finished = true
		eff.ReleaseStatic = m.started && m.static
		return eff, nil
	}
	eff.Notify = m.hasPending
	return eff, nil
}

// Due handles the expiry of a requested Requeue: the last update is
// delivered again (as SyncPodSync) unless something is pending or in flight.
func (m *Machine) Due() Effects {
	var eff Effects
	if m.lifecycle == LifecycleFinished || m.inFlight {
		return eff
	}
	m.requeueLast()
	eff.Notify = m.hasPending
	return eff
}

// Orphan handles SyncKnownPods finding the pod no longer desired (§3.1): a
// pod that never started and was never seen in the runtime is forgotten with
// no Syncer call; a running pod starts terminating with its spec's grace
// period; a terminating or terminated pod gets its last update replayed if it
// sits idle.
func (m *Machine) Orphan(now time.Time) Effects {
	var eff Effects
	if m.lifecycle == LifecycleFinished {
		return eff
	}
	m.deleted = true
	if !m.started && !m.observedRuntime && !m.inFlight {
		eff.Forget = true
		eff.Close = m.takeCompleted()
		eff.WithdrawStatic = m.static
		m.clearPending()
		m.lifecycle = LifecycleFinished
		return eff
	}
	if !m.IsTerminationRequested() {
		m.setTerminatingAt(now)
		m.lifecycle = LifecycleTerminating
		gp, _ := EffectiveGracePeriod(0, m.knownPod(), nil)
		m.setGracePeriod(gp)
		eff.CancelSync = true
		if !m.started && m.static {
			eff.WithdrawStatic = true
		}
	}
	if !m.inFlight && m.failures == 0 {
		m.requeueLast()
	}
	eff.Notify = m.hasPending && !m.inFlight
	return eff
}
