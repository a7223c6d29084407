package podworker

import (
	"k8s.io/apimachinery/pkg/types"
)

// withPod runs f on the pod's machine under its shard lock and reports
// whether the pod is known.
func (w *Workers) withPod(uid types.UID, f func(m *Machine)) bool {
	sh := w.shardFor(uid)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	rec := sh.pods[uid]
	if rec == nil {
		return false
	}
	f(&rec.m)
	return true
}

// queryPod answers a query for a pod: f's answer for a known pod, otherwise
// unknownBefore until the first SyncKnownPods and unknownAfter since.
func (w *Workers) queryPod(uid types.UID, f func(m *Machine) bool, unknownBefore, unknownAfter bool) bool {
	var answer bool
	if w.withPod(uid, func(m *Machine) { answer = f(m) }) {
		return answer
	}
	if w.podsSynced.Load() {
		return unknownAfter
	}
	return unknownBefore
}

// IsPodKnownTerminated implements PodWorkers.
func (w *Workers) IsPodKnownTerminated(uid types.UID) bool {
	return w.queryPod(uid, (*Machine).IsTerminated, false, false)
}

// CouldHaveRunningContainers implements PodWorkers.
func (w *Workers) CouldHaveRunningContainers(uid types.UID) bool {
	return w.queryPod(uid, func(m *Machine) bool { return !m.IsTerminated() }, true, false)
}

// ShouldPodBeFinished implements PodWorkers.
func (w *Workers) ShouldPodBeFinished(uid types.UID) bool {
	return w.queryPod(uid, (*Machine).IsFinished, false, true)
}

// IsPodTerminationRequested implements PodWorkers.
func (w *Workers) IsPodTerminationRequested(uid types.UID) bool {
	return w.queryPod(uid, (*Machine).IsTerminationRequested, false, false)
}

// ShouldPodContainersBeTerminating implements PodWorkers.
func (w *Workers) ShouldPodContainersBeTerminating(uid types.UID) bool {
	return w.queryPod(uid, (*Machine).IsTerminationStarted, false, true)
}

// ShouldPodRuntimeBeRemoved implements PodWorkers.
func (w *Workers) ShouldPodRuntimeBeRemoved(uid types.UID) bool {
	return w.queryPod(uid, (*Machine).IsTerminated, false, true)
}

// ShouldPodContentBeRemoved implements PodWorkers.
func (w *Workers) ShouldPodContentBeRemoved(uid types.UID) bool {
	return w.queryPod(uid, func(m *Machine) bool {
		return m.IsEvicted() || (m.IsDeleted() && m.IsTerminated())
	}, false, true)
}

// IsPodForMirrorPodTerminatingByFullName implements PodWorkers.
func (w *Workers) IsPodForMirrorPodTerminatingByFullName(podFullName string) bool {
	w.staticMu.Lock()
	uid, ok := w.static.holder(podFullName)
	w.staticMu.Unlock()
	if !ok {
		return false
	}
	var terminating bool
	w.withPod(uid, func(m *Machine) { terminating = m.IsTerminationRequested() && !m.IsTerminated() })
	return terminating
}
