package podworker

import (
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/runtime"
)

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
	// The flags come first and active right after them: what SyncKnownPods
	// reads of a pod (flags, lifecycle, active.pod) then lies in the first
	// 32 bytes of its record, one cache line.
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

	active  specs  // what the worker acts on; what queries see
	pending update // the newest update not yet consumed

	uid types.UID

	syncedAt  nanotime     // first seen
	startedAt nanotime     // allowed to start
	t         *termination // allocated once the pod terminates, or at once for a static pod
	failures  int32        // consecutive Syncer errors (saturates)
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
