package agent

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
)

// noteFinished records, for a final status just published, whether the pod
// was being deleted then: if not, housekeeping publishes the final status
// again once a deletion arrives (republishFinished).
func (a *Agent) noteFinished(pod *v1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if pod.DeletionTimestamp != nil {
		a.finishedDeleting[pod.UID] = true
	} else {
		delete(a.finishedDeleting, pod.UID)
	}
}

// republishFinished publishes again, once, the final status of desired pods
// that are being deleted and whose workers had finished before the deletion
// (a pod that ran to completion, then was deleted), after removing the dead
// containers it kept. The pod workers take no
// more updates for a finished pod, so without this an API-backed reporter
// would never learn that the object may now go, and it would stay
// Terminating for ever; the kubelet's status manager deletes such a pod once
// it is finished and being deleted. A failed publication is tried again at
// the next pass. It returns how many were published.
func (a *Agent) republishFinished(ctx context.Context, allPods []*v1.Pod) int {
	if a.report == nil {
		return 0 // the in-memory status has nothing to delete
	}
	n := 0
	for _, pod := range allPods {
		if pod.DeletionTimestamp == nil {
			continue
		}
		a.mu.Lock()
		done := a.finishedDeleting[pod.UID]
		a.mu.Unlock()
		if done {
			continue
		}
		// Known and finished; two cheap queries (PodInfo allocates).
		if !a.workers.IsPodKnownTerminated(pod.UID) || !a.workers.ShouldPodBeFinished(pod.UID) {
			continue
		}
		st, ok := a.status.Status(pod.UID)
		if !ok {
			continue
		}
		// Its dead containers, kept for its logs while it was desired, go
		// first: the object is deleted once the final status is published.
		if err := a.rt.RemovePod(ctx, &runtime.Pod{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}); err != nil {
			a.log.Error(err, "removing the containers of a deleted, finished pod failed; will retry", "pod", podRef(pod), "podUID", pod.UID)
			continue
		}
		mirror, _ := a.pods.GetMirrorPodByPod(pod)
		if err := a.reportFinished(ctx, pod, mirror, st); err != nil {
			a.log.Error(err, "publishing the final status of a deleted, finished pod failed; will retry", "pod", podRef(pod), "podUID", pod.UID)
			continue
		}
		a.noteFinished(pod)
		a.log.V(2).Info("final status published again for the deletion of a finished pod", "pod", podRef(pod), "podUID", pod.UID, "phase", st.Phase)
		n++
	}
	// Forget the pods the pod manager no longer has.
	a.mu.Lock()
	uids := make([]types.UID, 0, len(a.finishedDeleting))
	for uid := range a.finishedDeleting {
		uids = append(uids, uid)
	}
	a.mu.Unlock()
	for _, uid := range uids {
		if _, ok := a.pods.GetPodByUID(uid); !ok {
			a.mu.Lock()
			delete(a.finishedDeleting, uid)
			a.mu.Unlock()
		}
	}
	return n
}
