package agent

import (
	"context"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/agent/podstatus"
	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/podmanager/source"
	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/runtime"
)

// handleUpdate dispatches one merged config update (the kubelet's syncLoop
// config branch).
func (a *Agent) handleUpdate(ctx context.Context, u source.PodUpdate) {
	a.log.V(4).Info("config update", "op", u.Op.String(), "source", u.Source, "pods", len(u.Pods))
	switch u.Op {
	case source.ADD:
		a.handlePodAdditions(ctx, u.Pods)
	case source.UPDATE, source.DELETE:
		a.handlePodUpdates(u.Pods)
	case source.REMOVE:
		a.handlePodRemoves(u.Pods)
	case source.RECONCILE:
		a.handlePodReconcile(u.Pods)
	}
}

// handlePodAdditions adds new pods in creation order; a mirror pod becomes an
// update of its static pod; any other pod is admitted or rejected.
func (a *Agent) handlePodAdditions(ctx context.Context, pods []*v1.Pod) {
	pods = slices.Clone(pods)
	slices.SortStableFunc(pods, func(x, y *v1.Pod) int {
		return x.CreationTimestamp.Time.Compare(y.CreationTimestamp.Time)
	})
	now := a.clock.Now()
	// The active pods, for AdmitAttributes.OtherPods: walked once per
	// batch, when a handler will read them, then kept up to date as pods
	// of the batch are added (a walk per pod made adding n pods at once
	// O(n²): 7 s of CPU for 10,000 pods).
	var active []*v1.Pod
	if len(a.opts.AdmitHandlers) > 0 {
		batch := make(map[types.UID]bool, len(pods))
		for _, pod := range pods {
			batch[pod.UID] = true
		}
		for _, p := range a.pods.GetPods() {
			if !batch[p.UID] && !a.isPodInactive(p) {
				active = append(active, p)
			}
		}
	}
	for _, pod := range pods {
		a.pods.AddPod(pod)
		if podmanager.IsMirrorPod(pod) {
			a.updateStaticOfMirror(pod, now)
			continue
		}
		_, mirror, _ := a.pods.GetPodAndMirrorPod(pod)
		if pod.DeletionTimestamp == nil && !isTerminalPhase(pod.Status.Phase) {
			r := builtinAdmit(pod, a.sysctls)
			if r.Admit && len(a.opts.AdmitHandlers) > 0 {
				// Capped, so that a handler's append cannot reach our slice.
				attrs := &AdmitAttributes{Pod: pod, OtherPods: active[:len(active):len(active)]}
				r = admit(a.opts.AdmitHandlers, attrs)
			}
			if !r.Admit {
				a.rejectPod(ctx, pod, mirror, r)
				continue
			}
		}
		a.log.V(2).Info("pod added", "pod", podRef(pod), "podUID", pod.UID, "static", podmanager.IsStaticPod(pod))
		a.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, StartTime: now, Pod: pod, MirrorPod: mirror})
		if len(a.opts.AdmitHandlers) > 0 && !a.isPodInactive(pod) {
			active = append(active, pod)
		}
	}
}

// rejectPod publishes a Failed status for a pod admission refused; the pod
// never reaches a worker.
func (a *Agent) rejectPod(ctx context.Context, pod, mirror *v1.Pod, r AdmitResult) {
	a.log.Info("pod rejected", "pod", podRef(pod), "podUID", pod.UID, "reason", r.Reason, "message", r.Message)
	a.event(pod, v1.EventTypeWarning, r.Reason, "%s", r.Message)
	a.mu.Lock()
	a.rejected[pod.UID] = r
	a.mu.Unlock()
	a.publishStatus(ctx, pod, mirror, rejectedStatus(pod, r))
}

// handlePodUpdates sends spec changes (and graceful deletions) to the
// workers, translating a mirror pod to its static pod.
func (a *Agent) handlePodUpdates(pods []*v1.Pod) {
	now := a.clock.Now()
	for _, pod := range pods {
		a.pods.UpdatePod(pod)
		if podmanager.IsMirrorPod(pod) {
			a.updateStaticOfMirror(pod, now)
			continue
		}
		if a.isRejected(pod) {
			continue
		}
		if a.cluster.volumes != nil {
			// New labels and annotations reach its downwardAPI files.
			a.cluster.volumes.UpdatePod(pod)
		}
		_, mirror, _ := a.pods.GetPodAndMirrorPod(pod)
		a.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, StartTime: now, Pod: pod, MirrorPod: mirror})
	}
}

// handlePodRemoves forgets pods gone from their source and kills them. A
// removed mirror pod becomes an update of its static pod, so that the mirror
// is created again.
func (a *Agent) handlePodRemoves(pods []*v1.Pod) {
	now := a.clock.Now()
	for _, pod := range pods {
		a.pods.RemovePod(pod)
		if podmanager.IsMirrorPod(pod) {
			a.updateStaticOfMirror(pod, now)
			continue
		}
		a.mu.Lock()
		delete(a.rejected, pod.UID)
		a.mu.Unlock()
		a.forgetDeadline(pod)
		a.forgetEviction(pod)
		if !a.config.SeenAllSources() {
			// The kubelet's deletePod refuses here; housekeeping, which
			// starts once every source is ready, terminates the pod as an
			// orphan.
			a.log.V(2).Info("pod removed before sources are ready, housekeeping will terminate it", "pod", podRef(pod), "podUID", pod.UID)
			continue
		}
		a.log.V(2).Info("pod removed", "pod", podRef(pod), "podUID", pod.UID)
		a.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, Pod: pod})
	}
}

// handlePodReconcile stores status-only changes, and syncs a pod whose
// Ready condition no longer agrees with its readiness gates (another
// component set a gate's condition), as the kubelet's HandlePodReconcile.
func (a *Agent) handlePodReconcile(pods []*v1.Pod) {
	now := a.clock.Now()
	for _, pod := range pods {
		a.pods.UpdatePod(pod)
		if podmanager.IsMirrorPod(pod) || a.isRejected(pod) || !podstatus.NeedsReadinessReconcile(pod) {
			continue
		}
		a.log.V(4).Info("readiness gates changed", "pod", podRef(pod), "podUID", pod.UID)
		_, mirror, _ := a.pods.GetPodAndMirrorPod(pod)
		a.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodSync, StartTime: now, Pod: pod, MirrorPod: mirror})
	}
}

// updateStaticOfMirror sends an update for the static pod of a mirror pod
// that was added, changed or removed.
func (a *Agent) updateStaticOfMirror(mirror *v1.Pod, now time.Time) {
	pod, ok := a.pods.GetPodByMirrorPod(mirror)
	if !ok || a.isRejected(pod) {
		return
	}
	_, current, _ := a.pods.GetPodAndMirrorPod(pod)
	a.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, StartTime: now, Pod: pod, MirrorPod: current})
}

// handleRuntimeEvent wakes the worker of a pod whose containers changed
// (the kubelet's PLEG branch). It runs on the relister's goroutine and only
// hands the update off.
func (a *Agent) handleRuntimeEvent(ev runtime.PodEvent) {
	if ev.Type == runtime.ContainerRemoved {
		return
	}
	pod, ok := a.pods.GetPodByUID(ev.ID)
	if !ok || a.isRejected(pod) {
		return
	}
	a.log.V(4).Info("runtime event", "pod", podRef(pod), "podUID", pod.UID, "event", ev.Type)
	if ev.Type == runtime.ContainerStarted && a.opts.Recorder != nil && !a.runtimeEvents {
		if st, err := a.cache.Get(pod.UID); err == nil && st != nil {
			for _, cs := range st.ContainerStatuses {
				if cs.ID.ID == ev.ContainerID {
					a.event(pod, v1.EventTypeNormal, eventStarted, "Started container %s", cs.Name)
				}
			}
		}
	}
	_, mirror, _ := a.pods.GetPodAndMirrorPod(pod)
	a.workers.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodSync, Pod: pod, MirrorPod: mirror})
}

// updatePod sends an update to the workers and remembers the pod for Pods.
func (a *Agent) updatePod(o podworker.UpdatePodOptions) {
	a.mu.Lock()
	switch {
	case o.Pod != nil:
		a.tracked[o.Pod.UID] = trackedPod{name: o.Pod.Name, namespace: o.Pod.Namespace}
	case o.RunningPod != nil:
		if _, ok := a.tracked[o.RunningPod.ID]; !ok {
			a.tracked[o.RunningPod.ID] = trackedPod{name: o.RunningPod.Name, namespace: o.RunningPod.Namespace, runtimeOnly: true}
		}
	}
	a.mu.Unlock()
	a.workers.UpdatePod(o)
}

func (a *Agent) isRejected(pod *v1.Pod) bool {
	_, ok := a.rejection(pod.UID)
	return ok
}

// rejection returns why admission rejected the pod, if it did.
func (a *Agent) rejection(uid types.UID) (AdmitResult, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.rejected[uid]
	return r, ok
}

// publishStatus hands a status to the in-memory reporter and to the
// configured one. A failure of the latter is logged: the next sync
// publishes again.
func (a *Agent) publishStatus(ctx context.Context, pod, mirror *v1.Pod, st v1.PodStatus) {
	mu := a.publishLock(pod.UID)
	mu.Lock()
	defer mu.Unlock()
	a.publishStatusLocked(ctx, pod, mirror, st)
}

// publishStatusLocked is publishStatus with the pod's publishing lock held.
func (a *Agent) publishStatusLocked(ctx context.Context, pod, mirror *v1.Pod, st v1.PodStatus) {
	_ = a.status.SetPodStatus(ctx, pod, mirror, st)
	if a.report != nil {
		if err := a.report.SetPodStatus(ctx, pod, mirror, st); err != nil {
			a.log.Error(err, "publishing pod status failed", "pod", podRef(pod), "podUID", pod.UID)
		}
	}
}

// isPodInactive reports whether a desired pod does not count as active:
// known to be terminated, or in a terminal phase without a termination
// request (the kubelet's filterOutInactivePods). A pod admission rejected
// counts as terminal. The phase the agent published for a pod no worker
// knows is not used: it belongs to an incarnation that finished, and the
// pod was created again with the same UID.
func (a *Agent) isPodInactive(pod *v1.Pod) bool {
	if a.workers.IsPodKnownTerminated(pod.UID) {
		return true
	}
	terminal := isTerminalPhase(pod.Status.Phase) || a.isRejected(pod)
	return terminal && !a.workers.IsPodTerminationRequested(pod.UID)
}

// isInactive is isPodInactive on what SyncKnownPods said of the pod (ws,
// known) and a snapshot of the rejected pods: known terminated is the
// TerminatedPod state, termination requested any state but SyncPod.
func isInactive(pod *v1.Pod, ws podworker.PodWorkerSync, known bool, rejected map[types.UID]struct{}) bool {
	if known && ws.State == podworker.TerminatedPod {
		return true
	}
	terminal := isTerminalPhase(pod.Status.Phase)
	if !terminal && len(rejected) > 0 {
		_, terminal = rejected[pod.UID]
	}
	return terminal && !(known && ws.State != podworker.SyncPod)
}

// rejectedSnapshot returns the UIDs admission rejected (nil if none).
func (a *Agent) rejectedSnapshot() map[types.UID]struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.rejected) == 0 {
		return nil
	}
	out := make(map[types.UID]struct{}, len(a.rejected))
	for uid := range a.rejected {
		out[uid] = struct{}{}
	}
	return out
}

func podRef(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }
