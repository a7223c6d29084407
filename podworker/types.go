package podworker

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
)

// SyncPodType says why a pod is being synced.
type SyncPodType int

// The kinds of update. The zero value, SyncPodSync, is what periodic resyncs,
// retries and replays carry.
const (
	SyncPodSync   SyncPodType = iota // periodic or retried sync
	SyncPodUpdate                    // the pod's spec changed
	SyncPodCreate                    // first sight of the pod
	SyncPodKill                      // terminate the pod
)

// String returns "sync", "update", "create", "kill" or "unknown"; these are
// also the operation_type label values of the pod worker duration metric.
func (t SyncPodType) String() string {
	switch t {
	case SyncPodSync:
		return "sync"
	case SyncPodUpdate:
		return "update"
	case SyncPodCreate:
		return "create"
	case SyncPodKill:
		return "kill"
	default:
		return "unknown"
	}
}

// PodWorkerState is the coarse state of a pod that other components act on.
type PodWorkerState int

// The coarse states. A pod waiting to start is in SyncPod; a finished pod
// (cleanup done, about to be forgotten) is in TerminatedPod.
const (
	SyncPod        PodWorkerState = iota // pod should be running
	TerminatingPod                       // containers are being stopped
	TerminatedPod                        // no containers run or will start; cleanup pending
)

// String returns "sync", "terminating" or "terminated" (the lifecycle label
// values of kubelet_working_pods), or "unknown(N)"; it never panics.
func (s PodWorkerState) String() string {
	switch s {
	case SyncPod:
		return "sync"
	case TerminatingPod:
		return "terminating"
	case TerminatedPod:
		return "terminated"
	default:
		return fmt.Sprintf("unknown(%d)", int(s))
	}
}

// PodStatusFunc edits the API status written when a pod is killed (for
// example to set an eviction reason).
type PodStatusFunc func(podStatus *v1.PodStatus)

// KillPodOptions are the options of a kill.
type KillPodOptions struct {
	// CompletedCh is closed once the pod has terminated (no container runs or
	// will start), or at once if the pod is unknown, already terminated or not
	// being terminated by this update.
	CompletedCh chan<- struct{}
	// Evict marks the pod as evicted: its content may be removed once it has
	// terminated.
	Evict bool
	// PodStatusFunc edits the status written on termination; the last one
	// given wins.
	PodStatusFunc PodStatusFunc
	// PodTerminationGracePeriodSecondsOverride shortens the grace period.
	// A grace period never grows, and is at least one second.
	PodTerminationGracePeriodSecondsOverride *int64
}

// UpdatePodOptions is one update for one pod.
type UpdatePodOptions struct {
	// UpdateType says why the update is sent; SyncPodKill terminates the pod.
	UpdateType SyncPodType
	// StartTime, when set, is when the caller received the update; the time
	// from it to the end of the sync is reported to Options.Metrics.
	StartTime time.Time
	// Pod is the desired pod. It is nil only when RunningPod is set.
	Pod *v1.Pod
	// MirrorPod is the static pod's mirror pod, if any.
	MirrorPod *v1.Pod
	// RunningPod is a pod known only to the runtime (an orphan). It is only
	// accepted with UpdateType SyncPodKill and a nil Pod.
	RunningPod *runtime.Pod
	// KillPodOptions are the options of a kill (or of any update received
	// while the pod is terminating).
	KillPodOptions *KillPodOptions
}

// PodWorkerSync is what SyncKnownPods reports for each known pod.
type PodWorkerSync struct {
	State     PodWorkerState
	Orphan    bool // not in the desired set passed to SyncKnownPods
	HasConfig bool // the worker has a full spec (false: runtime-only pod)
	Static    bool
}

// PodWorkers is the lifecycle engine as the rest of an agent sees it.
// *Workers implements it.
type PodWorkers interface {
	// UpdatePod delivers the newest desired state of a pod, or a kill. It
	// never blocks on a Syncer call.
	UpdatePod(options UpdatePodOptions)
	// SyncKnownPods forgets finished pods that are no longer desired (or
	// whose restart was requested), drives undesired pods to termination,
	// and reports every pod it still knows.
	SyncKnownPods(desiredPods []*v1.Pod) map[types.UID]PodWorkerSync
	// IsPodKnownTerminated reports whether no container of the pod runs or
	// will start.
	IsPodKnownTerminated(uid types.UID) bool
	// CouldHaveRunningContainers reports whether a container of the pod may
	// be running. Before the first SyncKnownPods an unknown pod may be.
	CouldHaveRunningContainers(uid types.UID) bool
	// ShouldPodBeFinished reports whether the pod's terminated cleanup is done.
	ShouldPodBeFinished(uid types.UID) bool
	// IsPodTerminationRequested reports whether the pod is being terminated.
	IsPodTerminationRequested(uid types.UID) bool
	// ShouldPodContainersBeTerminating reports whether the worker has started
	// stopping the pod's containers.
	ShouldPodContainersBeTerminating(uid types.UID) bool
	// ShouldPodRuntimeBeRemoved reports whether runtime resources of the pod
	// (volumes, sandboxes) may be torn down.
	ShouldPodRuntimeBeRemoved(uid types.UID) bool
	// ShouldPodContentBeRemoved reports whether the pod's content may be
	// removed: it was evicted, or deleted and terminated.
	ShouldPodContentBeRemoved(uid types.UID) bool
	// IsPodForMirrorPodTerminatingByFullName reports whether the started
	// static pod with this full name is terminating but not yet terminated.
	IsPodForMirrorPodTerminatingByFullName(podFullName string) bool
}

// Syncer is what a node agent plugs in. Calls for one pod never overlap;
// calls for different pods run concurrently. Every method must return
// promptly once ctx is done (with an error wrapping ctx.Err()); the pod
// worker retries any error with backoff.
type Syncer interface {
	// SyncPod makes the pod run as its spec says. It is reentrant. It returns
	// isTerminal=true when the pod has reached Succeeded or Failed by itself,
	// which moves the pod to termination.
	SyncPod(ctx context.Context, updateType SyncPodType, pod, mirrorPod *v1.Pod, podStatus *runtime.PodStatus) (isTerminal bool, err error)
	// SyncTerminatingPod stops every container of the pod within gracePeriod
	// seconds (never nil, at least 1). A nil return means no container runs
	// or will start. It is retried, with the same or a shorter grace period,
	// until it returns nil. podStatusFn, if not nil, edits the status written.
	SyncTerminatingPod(ctx context.Context, pod *v1.Pod, podStatus *runtime.PodStatus, gracePeriod *int64, podStatusFn func(*v1.PodStatus)) error
	// SyncTerminatingRuntimePod stops a pod that has no spec (known only to
	// the runtime). A nil return ends the worker's knowledge of the pod.
	SyncTerminatingRuntimePod(ctx context.Context, runningPod *runtime.Pod) error
	// SyncTerminatedPod cleans up after a terminated pod and writes its final
	// status. A nil return means the pod is finished.
	SyncTerminatedPod(ctx context.Context, pod *v1.Pod, podStatus *runtime.PodStatus) error
}

// SyncerFuncs adapts functions to a Syncer. A nil function succeeds at once
// (SyncPod then reports isTerminal=false).
type SyncerFuncs struct {
	SyncPodFunc                   func(ctx context.Context, updateType SyncPodType, pod, mirrorPod *v1.Pod, podStatus *runtime.PodStatus) (bool, error)
	SyncTerminatingPodFunc        func(ctx context.Context, pod *v1.Pod, podStatus *runtime.PodStatus, gracePeriod *int64, podStatusFn func(*v1.PodStatus)) error
	SyncTerminatingRuntimePodFunc func(ctx context.Context, runningPod *runtime.Pod) error
	SyncTerminatedPodFunc         func(ctx context.Context, pod *v1.Pod, podStatus *runtime.PodStatus) error
}

var _ Syncer = SyncerFuncs{}

// SyncPod implements Syncer.
func (f SyncerFuncs) SyncPod(ctx context.Context, updateType SyncPodType, pod, mirrorPod *v1.Pod, podStatus *runtime.PodStatus) (bool, error) {
	if f.SyncPodFunc == nil {
		return false, nil
	}
	return f.SyncPodFunc(ctx, updateType, pod, mirrorPod, podStatus)
}

// SyncTerminatingPod implements Syncer.
func (f SyncerFuncs) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, podStatus *runtime.PodStatus, gracePeriod *int64, podStatusFn func(*v1.PodStatus)) error {
	if f.SyncTerminatingPodFunc == nil {
		return nil
	}
	return f.SyncTerminatingPodFunc(ctx, pod, podStatus, gracePeriod, podStatusFn)
}

// SyncTerminatingRuntimePod implements Syncer.
func (f SyncerFuncs) SyncTerminatingRuntimePod(ctx context.Context, runningPod *runtime.Pod) error {
	if f.SyncTerminatingRuntimePodFunc == nil {
		return nil
	}
	return f.SyncTerminatingRuntimePodFunc(ctx, runningPod)
}

// SyncTerminatedPod implements Syncer.
func (f SyncerFuncs) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, podStatus *runtime.PodStatus) error {
	if f.SyncTerminatedPodFunc == nil {
		return nil
	}
	return f.SyncTerminatedPodFunc(ctx, pod, podStatus)
}

// MetricsRecorder receives the pod worker's observations. metrics.Metrics
// implements it.
type MetricsRecorder interface {
	// ObservePodWorkerDuration records the time from an update's StartTime
	// to the end of its sync, by operation (the SyncPodType string), and the
	// time from termination request to finished under "terminated".
	ObservePodWorkerDuration(operation string, d time.Duration)
	// ObserveContainersPerPod records the container count of a pod when it
	// first starts.
	ObserveContainersPerPod(n int)
}
