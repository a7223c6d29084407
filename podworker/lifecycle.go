package podworker

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

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
