package agent

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The status edit of a kill (podworker.KillPodOptions.PodStatusFunc: a
// node shutdown's Terminated, an eviction's Evicted) is decided as the
// kubelet's: on the pod's status before its containers are stopped (a
// running pod stopped by a node shutdown is Failed, even when its
// containers then exit 0), and it holds for every later status of the
// pod: the one SyncTerminatingPod publishes and the final one of
// SyncTerminatedPod. (The published status keeps the pod's earlier phase,
// reason and message while it may still run containers, MergeStatus, so
// the final status, generated on top of it, would otherwise lose them; the
// kubelet's status cache keeps the terminal status as given.)

// killEdit is a pod's kill's status edit, with the phase it decided.
type killEdit struct {
	fn    func(*v1.PodStatus)
	phase v1.PodPhase
}

// noteKillStatus decides fn, the status edit of the pod's kill, on the
// status last published for the pod, and remembers it.
func (a *Agent) noteKillStatus(uid types.UID, fn func(*v1.PodStatus)) {
	if fn == nil {
		return
	}
	before, _ := a.status.Status(uid)
	probe := v1.PodStatus{Phase: before.Phase}
	if probe.Phase == "" {
		probe.Phase = v1.PodPending
	}
	fn(&probe)
	a.mu.Lock()
	a.killStatus[uid] = killEdit{fn: fn, phase: probe.Phase}
	a.mu.Unlock()
}

// applyKillStatus edits st, a stopped pod's status, as its kill decided.
func (a *Agent) applyKillStatus(uid types.UID, st *v1.PodStatus) {
	a.mu.Lock()
	e, ok := a.killStatus[uid]
	a.mu.Unlock()
	if !ok {
		return
	}
	e.fn(st)
	if isTerminalPhase(e.phase) {
		st.Phase = e.phase
	}
}

// forgetKillStatus drops the pod's status edit (it finished).
func (a *Agent) forgetKillStatus(uid types.UID) {
	a.mu.Lock()
	delete(a.killStatus, uid)
	a.mu.Unlock()
}
