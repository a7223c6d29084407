package podworker

import (
	"errors"
	"fmt"
	"math"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/runtime"
)

// Lifecycle is the fine-grained state of one pod in a Machine.
//
// Whether the pod has started (been allowed to run a Syncer call) is tracked
// beside it: a pod may be asked to terminate before it ever started.
type Lifecycle uint8

// The lifecycle states, in the only order a pod can move through them.
const (
	// LifecycleWaiting: known, not started and not asked to terminate. A
	// static pod waits here while another pod holds its full name.
	LifecycleWaiting Lifecycle = iota
	// LifecycleSyncing: started; SyncPod makes it run.
	LifecycleSyncing
	// LifecycleTerminating: asked to terminate; SyncTerminatingPod (or
	// SyncTerminatingRuntimePod) runs until it succeeds.
	LifecycleTerminating
	// LifecycleTerminated: no container runs or will start; SyncTerminatedPod
	// runs until it succeeds.
	LifecycleTerminated
	// LifecycleFinished: nothing left to do. The record is a tombstone until
	// SyncKnownPods forgets it.
	LifecycleFinished
)

// String returns the lifecycle's name.
func (l Lifecycle) String() string {
	switch l {
	case LifecycleWaiting:
		return "waiting"
	case LifecycleSyncing:
		return "syncing"
	case LifecycleTerminating:
		return "terminating"
	case LifecycleTerminated:
		return "terminated"
	case LifecycleFinished:
		return "finished"
	default:
		return fmt.Sprintf("Lifecycle(%d)", uint8(l))
	}
}

// WorkerState returns the coarse PodWorkerState of the lifecycle.
func (l Lifecycle) WorkerState() PodWorkerState {
	switch l {
	case LifecycleTerminating:
		return TerminatingPod
	case LifecycleTerminated, LifecycleFinished:
		return TerminatedPod
	default:
		return SyncPod
	}
}

// WorkKind says which Syncer method a Work item calls.
type WorkKind uint8

// The kinds of work.
const (
	WorkSyncPod WorkKind = iota
	WorkTerminatingPod
	WorkTerminatingRuntimePod
	WorkTerminatedPod
)

// String returns the Syncer method's name.
func (k WorkKind) String() string {
	switch k {
	case WorkSyncPod:
		return "SyncPod"
	case WorkTerminatingPod:
		return "SyncTerminatingPod"
	case WorkTerminatingRuntimePod:
		return "SyncTerminatingRuntimePod"
	case WorkTerminatedPod:
		return "SyncTerminatedPod"
	default:
		return fmt.Sprintf("WorkKind(%d)", uint8(k))
	}
}

// Work is one Syncer call a Machine asks for.
type Work struct {
	Kind       WorkKind
	UpdateType SyncPodType // the consumed update's type (SyncPodSync on replays)
	StartTime  time.Time   // the consumed update's StartTime (zero on replays)
	Pod        *v1.Pod     // nil for WorkTerminatingRuntimePod
	MirrorPod  *v1.Pod
	RunningPod *runtime.Pod // set for WorkTerminatingRuntimePod
	// GracePeriod is the effective grace period for WorkTerminatingPod and
	// WorkTerminatingRuntimePod; always at least MinGracePeriodSeconds.
	GracePeriod int64
	// StatusFunc is the last PodStatusFunc given by a kill, for
	// WorkTerminatingPod.
	StatusFunc PodStatusFunc
}

// StartDecision is the driver's answer to "may this pod start now?", asked
// before a pod's first Syncer call. Only static pods are ever told to wait.
type StartDecision uint8

// The start decisions.
const (
	StartAllowed StartDecision = iota
	StartNotYet                // another pod holds the full name
)

// Requeue asks the driver to re-deliver the last update later, unless
// something newer arrives first.
type Requeue uint8

// The requeue kinds.
const (
	RequeueNone    Requeue = iota
	RequeueResync          // after ResyncInterval (jittered)
	RequeueBackOff         // after the backoff for the pod's consecutive failures
)

// Effects are what a Machine asks its driver to do after an event.
type Effects struct {
	// Notify: work is pending; make sure the pod's work loop runs.
	Notify bool
	// CancelSync: cancel the context of the Syncer call in flight, if any
	// (termination was requested, or its grace period shrank).
	CancelSync bool
	// Close lists CompletedCh channels to close.
	Close []chan<- struct{}
	// Requeue asks for a delayed re-delivery.
	Requeue Requeue
	// Started: the pod was allowed to start by this event.
	Started bool
	// Waiting: the pod may not start yet (its full name is taken).
	Waiting bool
	// WithdrawStatic: a static pod that never started never will; give up
	// its place in line for the full name.
	WithdrawStatic bool
	// ReleaseStatic: a started static pod finished; free its full name.
	ReleaseStatic bool
	// Finished: the pod reached LifecycleFinished with this event.
	Finished bool
	// Forget: drop the pod's record entirely.
	Forget bool
	// Ignored, when not empty, says why an update changed nothing.
	Ignored string
}

// Errors of the state machine. An illegal event is a bug in the driver (or in
// a test that steps the machine), never in caller input.
var (
	ErrNoPod         = errors.New("update has neither Pod nor RunningPod")
	ErrNoUID         = errors.New("update's pod has no UID")
	ErrWrongUID      = errors.New("update is for another pod")
	ErrNotInFlight   = errors.New("no work in flight")
	ErrInFlight      = errors.New("work already in flight")
	ErrIllegalResult = errors.New("illegal result for the pod's lifecycle")
	ErrBadUpdateType = errors.New("unknown update type")
)

// update is a pending or active update. Kill options never need to be kept:
// while a pod terminates they are folded into the Machine (grace period,
// CompletedCh list, status func, eviction), and at any other time they are
// dropped. Its type and static bit live in the Machine's flag bytes, so that
// an idle pod's record stays small (docs/benchmarks.md, idle pods).
type update struct {
	specs
	startTime nanotime
}

// specs are the objects an update carries.
type specs struct {
	pod        *v1.Pod
	mirrorPod  *v1.Pod
	runningPod *runtime.Pod
}

// nanotime is a time as unix nanoseconds of the injected clock, 0 meaning
// unset: 8 bytes instead of time.Time's 24. The instant of the Unix epoch
// itself is stored 1 ns later so that it is not taken for unset.
type nanotime int64

func stamp(t time.Time) nanotime {
	if t.IsZero() {
		return 0
	}
	if n := t.UnixNano(); n != 0 {
		return nanotime(n)
	}
	return 1
}

// Time returns n as a time.Time (the zero time when unset). The monotonic
// reading of the original is not kept.
func (n nanotime) Time() time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(n))
}

// termination holds what only a terminating or static pod needs, allocated
// on first need so that a running pod does not carry it.
type termination struct {
	fullName      string   // static pods only: their place in line for the name
	terminatingAt nanotime // termination requested
	terminatedAt  nanotime // SyncTerminatingPod succeeded
	gracePeriod   int64    // effective; set once terminating, only shrinks
	completed     []chan<- struct{}
	statusFn      PodStatusFunc
	evicted       bool
}

// Machine is the lifecycle state machine of one pod: a pure, synchronous
// value with no locks, goroutines or clock. Events come in as method calls
// with the current time; decisions come out as Work and Effects. Its zero
// value is a pod never seen. The Workers driver keeps one Machine per pod
// under a lock; tests and custom drivers can step one directly:
//
//	var m podworker.Machine
//	m.Update(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: pod}, now, true)
//	work, ok, _, _ := m.Next(now, podworker.StartAllowed) // work.Kind == WorkSyncPod
//	m.Complete(now, false, nil)                           // Effects.Requeue == RequeueResync
type Machine struct {
	uid types.UID

	pending update // the newest update not yet consumed
	active  specs  // what the worker acts on; what queries see

	syncedAt  nanotime     // first seen
	startedAt nanotime     // allowed to start
	t         *termination // allocated once the pod terminates, or at once for a static pod
	failures  int32        // consecutive Syncer errors (saturates)

	pendingType   uint8 // SyncPodType of pending; its values fit a byte
	pendingStatic bool  // podmanager.IsStaticPod(pending.pod), computed on arrival
	activeStatic  bool  // the same for active.pod, so that scans never touch pods
	lifecycle     Lifecycle
	inFlightKind  WorkKind

	static             bool
	seen               bool
	started            bool
	startedTerminating bool
	deleted            bool
	restartRequested   bool
	observedRuntime    bool
	inFlight           bool
	hasPending         bool
	hasActive          bool
}

// term returns the termination part, allocating it on first use.
func (m *Machine) term() *termination {
	if m.t == nil {
		m.t = &termination{}
	}
	return m.t
}

// takeCompleted hands the CompletedCh channels over to be closed and drops
// the status func, which nothing will call any more.
func (m *Machine) takeCompleted() []chan<- struct{} {
	if m.t == nil {
		return nil
	}
	c := m.t.completed
	m.t.completed, m.t.statusFn = nil, nil
	return c
}

func (m *Machine) setTerminatingAt(now time.Time) { m.term().terminatingAt = stamp(now) }

func (m *Machine) setGracePeriod(gp int64) { m.term().gracePeriod = gp }

func (m *Machine) gracePeriod() int64 {
	if m.t == nil {
		return 0
	}
	return m.t.gracePeriod
}

func uidOf(o *UpdatePodOptions) types.UID {
	if o.Pod != nil {
		return o.Pod.UID
	}
	if o.RunningPod != nil {
		return o.RunningPod.ID
	}
	return ""
}

func isTerminalPhase(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}

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

// knownPod returns the newest spec the machine has, or nil.
func (m *Machine) knownPod() *v1.Pod {
	if m.hasPending && m.pending.pod != nil {
		return m.pending.pod
	}
	if m.hasActive {
		return m.active.pod
	}
	return nil
}

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

// UID returns the pod's UID.
func (m *Machine) UID() types.UID { return m.uid }

// FullName returns the pod's name_namespace.
func (m *Machine) FullName() string {
	switch {
	case m.t != nil && m.t.fullName != "":
		return m.t.fullName
	case !m.seen:
		return ""
	}
	if pod := m.knownPod(); pod != nil {
		return podmanager.FullName(pod)
	}
	if m.hasActive && m.active.runningPod != nil {
		return m.active.runningPod.FullName()
	}
	if m.hasPending && m.pending.runningPod != nil {
		return m.pending.runningPod.FullName()
	}
	return ""
}

// Static reports whether the pod is a static pod.
func (m *Machine) Static() bool { return m.static }

// Lifecycle returns the pod's lifecycle state.
func (m *Machine) Lifecycle() Lifecycle { return m.lifecycle }

// WorkerState returns the coarse state other components act on.
func (m *Machine) WorkerState() PodWorkerState { return m.lifecycle.WorkerState() }

// HasPending reports whether an update waits to be consumed.
func (m *Machine) HasPending() bool { return m.hasPending }

// InFlight reports whether a Work item is being executed.
func (m *Machine) InFlight() bool { return m.inFlight }

// IsStarted reports whether the pod was allowed to start.
func (m *Machine) IsStarted() bool { return m.started }

// IsTerminationRequested reports whether termination was requested.
func (m *Machine) IsTerminationRequested() bool { return m.lifecycle >= LifecycleTerminating }

// IsTerminationStarted reports whether the worker has acted on termination.
func (m *Machine) IsTerminationStarted() bool { return m.startedTerminating }

// IsTerminated reports whether no container runs or will start.
func (m *Machine) IsTerminated() bool { return m.lifecycle >= LifecycleTerminated }

// IsFinished reports whether the pod's cleanup is done.
func (m *Machine) IsFinished() bool { return m.lifecycle == LifecycleFinished }

// IsDeleted reports whether the pod was deleted (or orphaned).
func (m *Machine) IsDeleted() bool { return m.deleted }

// IsEvicted reports whether the pod was evicted.
func (m *Machine) IsEvicted() bool { return m.t != nil && m.t.evicted }

// IsRestartRequested reports whether the UID was created again while it
// terminated.
func (m *Machine) IsRestartRequested() bool { return m.restartRequested }

// GracePeriod returns the effective grace period (0 before termination).
func (m *Machine) GracePeriod() int64 { return m.gracePeriod() }

// Failures returns the number of consecutive Syncer errors.
func (m *Machine) Failures() int { return int(m.failures) }

// ConfigPod returns the spec the machine acts on (active, else pending), or
// nil for a runtime-only pod.
func (m *Machine) ConfigPod() *v1.Pod {
	if m.hasActive && m.active.pod != nil {
		return m.active.pod
	}
	if m.hasPending {
		return m.pending.pod
	}
	return nil
}

// Times returns when the pod was first seen, started, asked to terminate and
// terminated (zero when not yet).
func (m *Machine) Times() (synced, started, terminating, terminated time.Time) {
	synced, started = m.syncedAt.Time(), m.startedAt.Time()
	if m.t != nil {
		terminating, terminated = m.t.terminatingAt.Time(), m.t.terminatedAt.Time()
	}
	return synced, started, terminating, terminated
}

// WorkerSync returns what SyncKnownPods reports for the pod.
func (m *Machine) WorkerSync(orphan bool) PodWorkerSync {
	s := PodWorkerSync{State: m.WorkerState(), Orphan: orphan}
	switch {
	case m.hasActive && m.active.pod != nil:
		s.HasConfig, s.Static = true, m.activeStatic
	case m.hasPending && m.pending.pod != nil:
		s.HasConfig, s.Static = true, m.pendingStatic
	}
	return s
}
