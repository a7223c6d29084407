package podworker

import (
	"fmt"
	"time"

	"github.com/podlife/podlife/podmanager"
)

// Update folds an UpdatePod call into the machine (the kubelet's UpdatePod,
// KUBELET-BEHAVIOUR.md §2.2). cachedTerminal says whether the runtime shows
// nothing of the pod running; it only matters on first sight of a pod whose
// phase is already terminal, which then goes straight to LifecycleTerminated.
func (m *Machine) Update(o UpdatePodOptions, now time.Time, cachedTerminal bool) (Effects, error) {
	var eff Effects
	var kill KillPodOptions
	if o.KillPodOptions != nil {
		kill = *o.KillPodOptions
	}
	closeCompleted := func() {
		if kill.CompletedCh != nil {
			eff.Close = append(eff.Close, kill.CompletedCh)
		}
	}
	if o.RunningPod != nil && o.Pod != nil {
		o.RunningPod = nil
	}
	if o.Pod == nil && o.RunningPod == nil {
		closeCompleted()
		return eff, ErrNoPod
	}
	uid := uidOf(&o)
	if uid == "" {
		closeCompleted()
		return eff, ErrNoUID
	}
	if o.UpdateType < SyncPodSync || o.UpdateType > SyncPodKill {
		closeCompleted()
		return eff, fmt.Errorf("%w: %d", ErrBadUpdateType, int(o.UpdateType))
	}
	if m.seen && uid != m.uid {
		closeCompleted()
		return eff, fmt.Errorf("%w: machine has %s, update has %s", ErrWrongUID, m.uid, uid)
	}
	if o.Pod == nil && o.UpdateType != SyncPodKill {
		closeCompleted()
		eff.Ignored = "a RunningPod is only accepted with SyncPodKill"
		return eff, nil
	}

	first := !m.seen
	if first {
		m.seen = true
		m.uid = uid
		m.syncedAt = stamp(now)
		if o.Pod != nil {
			m.static = podmanager.IsStaticPod(o.Pod)
			if m.static {
				m.term().fullName = podmanager.FullName(o.Pod)
			}
			if isTerminalPhase(o.Pod) && cachedTerminal {
				// Born terminated: only SyncTerminatedPod will run.
				t := m.term()
				t.terminatingAt, t.terminatedAt = stamp(now), stamp(now)
				m.startedTerminating = true
				m.lifecycle = LifecycleTerminated
			}
		}
	}

	isRuntime := o.Pod == nil
	if isRuntime {
		if known := m.knownPod(); known != nil {
			// The runtime saw a pod we have a spec for: a normal kill.
			o.Pod, o.RunningPod, isRuntime = known, nil, false
		}
		m.observedRuntime = true
	}

	if !first && m.IsTerminationRequested() && o.UpdateType == SyncPodCreate {
		// The same UID was created again while the old incarnation
		// terminates: it restarts once the old one has finished.
		m.restartRequested = true
		closeCompleted()
		eff.Ignored = "create while terminating: restart requested"
		return eff, nil
	}
	if m.lifecycle == LifecycleFinished {
		closeCompleted()
		eff.Ignored = "pod already finished"
		return eff, nil
	}

	becameTerminating := false
	if !m.IsTerminationRequested() {
		switch {
		case isRuntime:
			m.deleted, becameTerminating = true, true
		case o.Pod.DeletionTimestamp != nil:
			m.deleted, becameTerminating = true, true
		case isTerminalPhase(o.Pod):
			becameTerminating = true
		case o.UpdateType == SyncPodKill:
			becameTerminating = true
		}
		if becameTerminating {
			m.setTerminatingAt(now)
			m.lifecycle = LifecycleTerminating
		}
	} else if !isRuntime && o.Pod.DeletionTimestamp != nil {
		m.deleted = true
	}
	if kill.Evict && m.lifecycle == LifecycleTerminating {
		m.term().evicted = true
	}

	shortened := false
	switch m.lifecycle {
	case LifecycleTerminated:
		closeCompleted()
		if isRuntime {
			eff.Ignored = "runtime pod already terminated"
			return eff, nil
		}
	case LifecycleTerminating:
		t := m.term()
		if kill.CompletedCh != nil {
			t.completed = append(t.completed, kill.CompletedCh)
		}
		if kill.PodStatusFunc != nil {
			t.statusFn = kill.PodStatusFunc
		}
		t.gracePeriod, shortened = EffectiveGracePeriod(t.gracePeriod, o.Pod, kill.PodTerminationGracePeriodSecondsOverride)
	default:
		closeCompleted()
	}

	u := update{specs: specs{pod: o.Pod, mirrorPod: o.MirrorPod, runningPod: o.RunningPod}, startTime: stamp(o.StartTime)}
	if m.hasPending && m.pending.startTime != 0 && (u.startTime == 0 || m.pending.startTime < u.startTime) {
		// Latency covers every update coalesced into this one.
		u.startTime = m.pending.startTime
	}
	m.pending, m.hasPending = u, true
	m.pendingType, m.pendingStatic = uint8(o.UpdateType), o.Pod != nil && podmanager.IsStaticPod(o.Pod)
	eff.Notify = true
	eff.CancelSync = becameTerminating || shortened
	if becameTerminating && !m.started && m.static {
		eff.WithdrawStatic = true
	}
	return eff, nil
}
