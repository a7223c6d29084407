package agent

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"

	statusmanager "github.com/podlife/podlife/agent/status"
	"k8s.io/apimachinery/pkg/types"
)

// PodStateProvider tells a StatusReporter whether a pod may still have
// running containers. The agent's pod workers (podworker.Workers) implement
// it.
type PodStateProvider interface {
	CouldHaveRunningContainers(uid types.UID) bool
}

// StatusReporter publishes pod statuses: in memory (MemoryStatusReporter), to
// the API server, to a control plane of your own.
//
// Every implementation must keep the rule that a terminal phase (Succeeded,
// Failed) is never reported while PodStateProvider.CouldHaveRunningContainers
// is true for the pod: other components take a terminal phase to mean that
// the pod's resources are released. MergeStatus applies the rule.
type StatusReporter interface {
	// SetPodStatus publishes the newest status of pod. For a static pod,
	// mirrorPod is its mirror pod in the API server, or nil. It is called
	// after each sync of the pod, and for pods that admission rejected.
	SetPodStatus(ctx context.Context, pod, mirrorPod *v1.Pod, status v1.PodStatus) error
	// PodFinished publishes the final status of a pod whose containers have
	// all stopped (from SyncTerminatedPod): no container runs or will run.
	// Those of a pod being deleted, evicted or no longer desired are removed
	// first; a pod that ran to completion and is still desired keeps its
	// dead containers (for its logs and exit codes) until it is deleted:
	// housekeeping then removes them, and calls PodFinished again for a
	// graceful deletion that came after the first call. An API-backed
	// reporter may delete the API pod now, and only now.
	PodFinished(ctx context.Context, pod, mirrorPod *v1.Pod, status v1.PodStatus) error
}

// MergeStatus returns the status to publish when status replaces old (nil
// when nothing was published yet): status itself, except that while the pod
// could still have running containers a terminal phase is not published and
// the previous phase, reason and message (Pending when none) are kept. It
// is status.MergeStatus, the rule the cluster's status manager keeps too.
func MergeStatus(old *v1.PodStatus, status v1.PodStatus, couldHaveRunningContainers bool) v1.PodStatus {
	return statusmanager.MergeStatus(old, status, couldHaveRunningContainers)
}

func isTerminalPhase(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

// MemoryStatusReporter keeps the newest published status of every pod in
// memory. It is safe for concurrent use.
type MemoryStatusReporter struct {
	pods PodStateProvider

	mu       sync.Mutex
	statuses map[types.UID]memoryStatus
}

type memoryStatus struct {
	status   v1.PodStatus
	finished bool
}

var _ StatusReporter = (*MemoryStatusReporter)(nil)

// NewMemoryStatusReporter returns an empty MemoryStatusReporter that asks
// pods whether a pod could still have running containers.
func NewMemoryStatusReporter(pods PodStateProvider) *MemoryStatusReporter {
	return &MemoryStatusReporter{pods: pods, statuses: map[types.UID]memoryStatus{}}
}

// SetPodStatus implements StatusReporter.
func (r *MemoryStatusReporter) SetPodStatus(_ context.Context, pod, _ *v1.Pod, status v1.PodStatus) error {
	r.set(pod.UID, status, false)
	return nil
}

// PodFinished implements StatusReporter.
func (r *MemoryStatusReporter) PodFinished(_ context.Context, pod, _ *v1.Pod, status v1.PodStatus) error {
	r.set(pod.UID, status, true)
	return nil
}

func (r *MemoryStatusReporter) set(uid types.UID, status v1.PodStatus, finished bool) {
	// Ask before locking: never call out under the lock.
	could := r.pods.CouldHaveRunningContainers(uid)
	r.mu.Lock()
	defer r.mu.Unlock()
	var old *v1.PodStatus
	if prev, ok := r.statuses[uid]; ok {
		old = &prev.status
	}
	r.statuses[uid] = memoryStatus{status: MergeStatus(old, status, could), finished: finished}
}

// Status returns the newest published status of the pod and whether there
// is one.
func (r *MemoryStatusReporter) Status(uid types.UID) (v1.PodStatus, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.statuses[uid]
	return *s.status.DeepCopy(), ok
}

// Finished reports whether PodFinished was called for the pod.
func (r *MemoryStatusReporter) Finished(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.statuses[uid].finished
}

// phase returns the published phase without copying the status.
func (r *MemoryStatusReporter) phase(uid types.UID) (v1.PodPhase, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.statuses[uid]
	return s.status.Phase, ok
}

// Delete forgets a pod.
func (r *MemoryStatusReporter) Delete(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.statuses, uid)
}

// Len returns the number of pods with a status.
func (r *MemoryStatusReporter) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.statuses)
}

// StatusReporterFuncs adapts functions to a StatusReporter. A nil function
// does nothing and succeeds.
type StatusReporterFuncs struct {
	SetPodStatusFunc func(ctx context.Context, pod, mirrorPod *v1.Pod, status v1.PodStatus) error
	PodFinishedFunc  func(ctx context.Context, pod, mirrorPod *v1.Pod, status v1.PodStatus) error
}

var _ StatusReporter = StatusReporterFuncs{}

// SetPodStatus calls SetPodStatusFunc.
func (f StatusReporterFuncs) SetPodStatus(ctx context.Context, pod, mirrorPod *v1.Pod, status v1.PodStatus) error {
	if f.SetPodStatusFunc == nil {
		return nil
	}
	return f.SetPodStatusFunc(ctx, pod, mirrorPod, status)
}

// PodFinished calls PodFinishedFunc.
func (f StatusReporterFuncs) PodFinished(ctx context.Context, pod, mirrorPod *v1.Pod, status v1.PodStatus) error {
	if f.PodFinishedFunc == nil {
		return nil
	}
	return f.PodFinishedFunc(ctx, pod, mirrorPod, status)
}
