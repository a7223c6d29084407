package agent

import (
	"math"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/podworker"
)

// Active deadlines (spec.activeDeadlineSeconds), as the kubelet's active
// deadline handler: a pod active on the node for longer than its deadline,
// counted from the startTime of its status, fails with reason
// DeadlineExceeded (and a Normal event of that reason); the pod worker then
// stops it as any pod that reached a terminal phase, and every later status
// of the pod keeps that phase, reason and message. Housekeeping syncs a pod
// whose deadline has passed, so the deadline is enforced within one
// housekeeping interval (the kubelet: its 1 s sync loop).

const (
	reasonDeadlineExceeded  = "DeadlineExceeded"
	messageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// pastActiveDeadline reports whether pod, started at start, has been
// active for its activeDeadlineSeconds or longer. A deadline too large for
// a time.Duration never passes.
func (a *Agent) pastActiveDeadline(pod *v1.Pod, start *metav1.Time) bool {
	d := pod.Spec.ActiveDeadlineSeconds
	if d == nil || *d <= 0 || start == nil || start.IsZero() {
		return false
	}
	if *d > math.MaxInt64/int64(time.Second) {
		return false
	}
	return a.clock.Since(start.Time) >= time.Duration(*d)*time.Second
}

// applyActiveDeadline fails st, the status just generated for pod, once the
// pod is past its active deadline: decided (with the event) while the pod
// runs and no termination was asked for, then kept for every later status
// of the pod until it finished.
func (a *Agent) applyActiveDeadline(pod *v1.Pod, st *v1.PodStatus, terminal bool) {
	if pod.Spec.ActiveDeadlineSeconds == nil {
		return
	}
	a.mu.Lock()
	exceeded := a.exceeded[pod.UID]
	a.mu.Unlock()
	if !exceeded {
		if terminal || isTerminalPhase(st.Phase) || a.workers.IsPodTerminationRequested(pod.UID) || !a.pastActiveDeadline(pod, st.StartTime) {
			return
		}
		a.mu.Lock()
		a.exceeded[pod.UID] = true
		a.mu.Unlock()
		a.log.V(2).Info("pod past its active deadline", "pod", podRef(pod), "podUID", pod.UID, "activeDeadlineSeconds", *pod.Spec.ActiveDeadlineSeconds)
		a.event(pod, v1.EventTypeNormal, reasonDeadlineExceeded, messageDeadlineExceeded)
	}
	st.Phase = v1.PodFailed
	st.Reason, st.Message = reasonDeadlineExceeded, messageDeadlineExceeded
}

// syncPastDeadline asks the pod worker of each active pod past its active
// deadline, not yet failed for it, to sync it (housekeeping).
func (a *Agent) syncPastDeadline(active []*v1.Pod) {
	for _, pod := range active {
		if pod.Spec.ActiveDeadlineSeconds == nil {
			continue
		}
		a.mu.Lock()
		exceeded := a.exceeded[pod.UID]
		a.mu.Unlock()
		if exceeded || a.workers.IsPodTerminationRequested(pod.UID) {
			continue
		}
		st, ok := a.status.Status(pod.UID)
		if !ok || !a.pastActiveDeadline(pod, st.StartTime) {
			continue
		}
		_, mirror, _ := a.pods.GetPodAndMirrorPod(pod)
		a.workers.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodSync, Pod: pod, MirrorPod: mirror})
	}
}

// forgetDeadline drops what the agent knows of the pod's deadline (it
// finished, or left its source).
func (a *Agent) forgetDeadline(pod *v1.Pod) {
	a.mu.Lock()
	delete(a.exceeded, pod.UID)
	a.mu.Unlock()
}
