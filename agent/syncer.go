package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/runtime"
)

// ErrStillRunning is wrapped by SyncTerminatingPod when a container or sandbox
// of the pod still runs after the kill; the pod worker retries.
var ErrStillRunning = errors.New("pod still has running containers after kill")

// syncer is the runtime-backed podworker.Syncer of an Agent.
type syncer struct {
	a *Agent
}

var _ podworker.Syncer = (*syncer)(nil)

// SyncPod implements podworker.Syncer: it keeps the mirror pod of a static
// pod in line, publishes the pod's status, and makes the runtime run the pod.
// It reports isTerminal once the restart policy says the pod is done.
func (s *syncer) SyncPod(ctx context.Context, updateType podworker.SyncPodType, pod, mirrorPod *v1.Pod, podStatus *runtime.PodStatus) (bool, error) {
	a := s.a
	log := a.log.WithValues("pod", podRef(pod), "podUID", pod.UID)
	if updateType == podworker.SyncPodCreate {
		if seen, err := time.Parse(time.RFC3339Nano, pod.Annotations[podmanager.ConfigFirstSeenAnnotationKey]); err == nil {
			a.metrics.ObservePodWorkerStartDuration(a.clock.Since(seen))
		}
		log.V(2).Info("pod starting", "containers", len(pod.Spec.Containers))
	}
	if podmanager.IsStaticPod(pod) {
		// The pod workers remember the last mirror pod they were given
		// when an update carries none (as the kubelet does), so a mirror
		// deleted in the API would never be recreated: ask the pod manager,
		// which knows the current one.
		mirrorPod, _ = a.pods.GetMirrorPodByPod(pod)
	}
	if podmanager.IsStaticPod(pod) && a.opts.MirrorClient != nil {
		// As the kubelet: a mirror problem never blocks the pod itself.
		if err := podmanager.ReconcileMirrorPod(ctx, a.opts.MirrorClient, pod, mirrorPod); err != nil {
			log.Error(err, "mirror pod not reconciled")
		}
	}
	a.probeContainers(pod, podStatus)
	st := a.generateStatus(pod, podStatus, false)
	a.publishStatus(ctx, pod, mirrorPod, st)
	if isTerminalPhase(st.Phase) {
		log.V(2).Info("pod reached a terminal phase", "phase", st.Phase)
		return true, nil
	}
	killed, err := a.killUnhealthy(ctx, pod)
	if err != nil {
		return false, fmt.Errorf("sync pod %s: %w", podRef(pod), err)
	}
	if killed {
		// The status given predates the kill: read it again so that the
		// runtime restarts what it stopped, by the restart policy.
		ts := a.clock.Now()
		if podStatus, err = a.rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace); err != nil {
			return false, fmt.Errorf("sync pod %s: re-read status after a probe kill: %w", podRef(pod), err)
		}
		a.cache.Set(pod.UID, podStatus, nil, ts)
		a.relist.Reinspect(pod.UID)
	}
	err = a.rt.SyncPod(ctx, pod, podStatus)
	if errors.Is(err, runtime.ErrAlreadyExists) {
		err = a.resyncWithFreshStatus(ctx, pod, err)
	}
	changed := a.noteStartFailures(pod.UID, err)
	if err != nil {
		switch {
		case errors.Is(err, runtime.ErrBackOff):
			a.event(pod, v1.EventTypeWarning, eventBackOff, "Back-off restarting failed container: %v", err)
		case onlyStartFailures(err):
			// The runtime recorded the kubelet's events for each (Failed,
			// BackOff); the kubelet adds no FailedSync for them either.
		default:
			a.event(pod, v1.EventTypeWarning, eventFailedSync, "error syncing pod: %v", err)
		}
		if changed {
			// Show the new reasons now rather than at the next sync (a
			// back-off period later).
			a.publishStarted(ctx, pod, mirrorPod)
		}
		return false, fmt.Errorf("sync pod %s: %w", podRef(pod), err)
	}
	if mayHaveStarted(pod, podStatus) {
		a.publishStarted(ctx, pod, mirrorPod)
	}
	return false, nil
}

// mayHaveStarted reports whether a successful SyncPod given podStatus may
// have started containers: some regular container of the spec was not
// running in it, or some ephemeral container had no instance or one not
// started (kubectl debug waits for it to show Running).
func mayHaveStarted(pod *v1.Pod, podStatus *runtime.PodStatus) bool {
	if podStatus == nil {
		return true
	}
	for i := range pod.Spec.Containers {
		cs := podStatus.FindContainerStatusByName(pod.Spec.Containers[i].Name)
		if cs == nil || cs.State != runtime.ContainerStateRunning {
			return true
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		cs := podStatus.FindContainerStatusByName(pod.Spec.EphemeralContainers[i].Name)
		if cs == nil || cs.State == runtime.ContainerStateCreated {
			return true
		}
	}
	return false
}

// publishStarted reads the pod's status from the runtime right after
// SyncPod started containers, stores it in the cache and publishes the
// status it gives, so that the pod shows Running now rather than after the
// relister's next pass (up to its period later). The relister still sees
// the change and syncs the pod again, with the same status; and since the
// status may name a container its listing has not shown yet, it reads the
// pod again at its next pass (Reinspect), so that a container removed
// before then is not left in the cache as running. A failed read changes
// nothing: the relister catches up.
func (a *Agent) publishStarted(ctx context.Context, pod, mirrorPod *v1.Pod) {
	ts := a.clock.Now()
	fresh, err := a.rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		a.log.V(2).Info("reading the status of a pod just started failed; the relister will", "pod", podRef(pod), "podUID", pod.UID, "err", err)
		return
	}
	a.cache.Set(pod.UID, fresh, nil, ts)
	a.relist.Reinspect(pod.UID)
	a.probeContainers(pod, fresh)
	st := a.generateStatus(pod, fresh, false)
	if isTerminalPhase(st.Phase) {
		return // the pod worker learns it from its next sync
	}
	a.publishStatus(ctx, pod, mirrorPod, st)
}

// Event reasons the agent records, as the kubelet names them. The agent
// records what it sees: a container found running by the relister
// (Started, for a runtime that records no events of its own), containers
// it stops (Killing), a restart the runtime deferred (BackOff), a failed
// sync (FailedSync), probes that failed (Unhealthy) or succeeded with a
// warning (ProbeWarning). Pulling, Pulled, Created and, with runtime/cri,
// Started are the runtime's to record.
const (
	eventFailedSync = "FailedSync"
	eventStarted    = "Started"
	eventKilling    = "Killing"
	eventBackOff    = "BackOff"
	eventUnhealthy  = "Unhealthy"
	// eventProbeWarning: a probe that succeeded with a warning.
	eventProbeWarning = "ProbeWarning"
)

// event records an event about pod, when the agent has a Recorder.
func (a *Agent) event(pod *v1.Pod, eventtype, reason, messageFmt string, args ...any) {
	if a.opts.Recorder != nil {
		a.opts.Recorder.Eventf(pod, eventtype, reason, messageFmt, args...)
	}
}

// resyncWithFreshStatus handles an AlreadyExists from SyncPod: the status it
// was given misses an instance the runtime has (a false NotFound while the
// relister inspected the pod, say), and since the runtime's listing need not
// change again the relister might never correct it. It reads the pod's status
// now, stores it in the cache for the next syncs and tries once more with it.
func (a *Agent) resyncWithFreshStatus(ctx context.Context, pod *v1.Pod, syncErr error) error {
	ts := a.clock.Now()
	fresh, err := a.rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return errors.Join(syncErr, fmt.Errorf("re-read status: %w", err))
	}
	a.cache.Set(pod.UID, fresh, nil, ts)
	a.relist.Reinspect(pod.UID)
	a.log.V(2).Info("pod status was stale (already exists); synced again with a fresh one", "pod", podRef(pod), "podUID", pod.UID)
	return a.rt.SyncPod(ctx, pod, fresh)
}

// SyncTerminatingPod implements podworker.Syncer: it kills every container of
// the pod with gracePeriod and fails unless nothing runs afterwards.
func (s *syncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, podStatus *runtime.PodStatus, gracePeriod *int64, podStatusFn func(*v1.PodStatus)) error {
	a := s.a
	gp := int64(-1)
	if gracePeriod != nil {
		gp = *gracePeriod
	}
	a.log.V(2).Info("pod terminating", "pod", podRef(pod), "podUID", pod.UID, "gracePeriod", gp)
	if a.prober != nil {
		// Readiness keeps running (the pod turns not ready); a liveness or
		// startup failure must not restart what is being stopped.
		a.prober.StopLivenessAndStartup(pod.UID)
	}
	if podStatus != nil && a.opts.Recorder != nil {
		for _, cs := range podStatus.ContainerStatuses {
			if cs.State == runtime.ContainerStateRunning {
				a.event(pod, v1.EventTypeNormal, eventKilling, "Stopping container %s", cs.Name)
			}
		}
	}
	// The kill's status edit is decided on the status before the kill
	// (killstatus.go).
	a.noteKillStatus(pod.UID, podStatusFn)
	if err := a.rt.KillPod(ctx, pod, nil, gracePeriod); err != nil {
		return fmt.Errorf("kill pod %s: %w", podRef(pod), err)
	}
	ts := a.clock.Now()
	after, err := a.rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return fmt.Errorf("read status of killed pod %s: %w", podRef(pod), err)
	}
	if after.HasRunningContainers() || after.HasReadySandbox() {
		return fmt.Errorf("pod %s: %w", podRef(pod), ErrStillRunning)
	}
	// The terminated sync gets this status without waiting for a relist
	// (stoppedstatus.go).
	a.workerCache.setStopped(pod.UID, after, ts)
	a.relist.Reinspect(pod.UID)
	// As the kubelet (since 1.27): once stopped, the pod is terminal; the
	// phase reaches the API server with the final status (the status
	// manager does not write a terminal phase while the pod worker may
	// still run containers).
	st := a.generateStatus(pod, after, true)
	if r, ok := a.rejection(pod.UID); ok {
		st = rejectedStatus(pod, r) // killed so that it can be deleted
	}
	a.applyKillStatus(pod.UID, &st)
	_, mirror, _ := a.pods.GetPodAndMirrorPod(pod)
	a.publishStatus(ctx, pod, mirror, st)
	a.log.V(2).Info("pod terminated", "pod", podRef(pod), "podUID", pod.UID)
	return nil
}

// SyncTerminatingRuntimePod implements podworker.Syncer: it kills a pod known
// only to the runtime with a grace period of 1 s, then removes what is left of
// it (best effort: it has no spec, nothing will ever sync it again).
func (s *syncer) SyncTerminatingRuntimePod(ctx context.Context, runningPod *runtime.Pod) error {
	a := s.a
	ref := runningPod.Namespace + "/" + runningPod.Name
	a.log.V(2).Info("orphaned runtime pod terminating", "pod", ref, "podUID", runningPod.ID, "gracePeriod", 1)
	one := int64(1)
	if err := a.rt.KillPod(ctx, nil, runningPod, &one); err != nil {
		return fmt.Errorf("kill runtime pod %s: %w", ref, err)
	}
	if err := a.rt.RemovePod(ctx, runningPod); err != nil {
		a.log.Error(err, "removing orphaned runtime pod failed", "pod", ref, "podUID", runningPod.ID)
	}
	a.cache.Delete(runningPod.ID)
	a.log.V(2).Info("orphaned runtime pod terminated", "pod", ref, "podUID", runningPod.ID)
	return nil
}

// SyncTerminatedPod implements podworker.Syncer: it removes the containers
// and sandboxes of a pod whose content may go (deleted or evicted, or no
// longer desired), tears down its volumes and publishes its final,
// terminal status. A pod that ran to completion and is still in the API (a
// Job's pod, say) keeps its dead containers, as on a kubelet, so
// that `kubectl logs` and its exit codes still work; they are removed once
// the pod is deleted (housekeeping's removeDeadRemains).
func (s *syncer) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, podStatus *runtime.PodStatus) error {
	a := s.a
	// The stopped status served this sync; a retry waits for the relister.
	a.workerCache.forgetStopped(pod.UID)
	// Volumes first: the runtime's RemovePod moves the pod's folder away,
	// and with a root shared with the runtime that folder holds them
	// (mounts must not move along).
	if a.cluster.volumes != nil {
		if err := a.cluster.volumes.TearDown(pod.UID); err != nil {
			return fmt.Errorf("tear down volumes of pod %s: %w", podRef(pod), err)
		}
	}
	if a.podContentRemovable(pod) {
		if err := s.removeRuntimePod(ctx, pod); err != nil {
			return err
		}
	}
	st := a.generateStatus(pod, podStatus, true)
	if r, ok := a.rejection(pod.UID); ok {
		st = rejectedStatus(pod, r)
	}
	a.applyKillStatus(pod.UID, &st)
	mirror, _ := a.pods.GetMirrorPodByPod(pod)
	if err := a.publishFinished(ctx, pod, mirror, st); err != nil {
		return fmt.Errorf("publish final status of %s: %w", podRef(pod), err)
	}
	a.cache.Delete(pod.UID)
	if a.prober != nil {
		a.prober.RemovePod(pod.UID)
	}
	a.forgetDeadline(pod)
	a.forgetEviction(pod)
	a.forgetKillStatus(pod.UID)
	a.log.V(2).Info("pod finished", "pod", podRef(pod), "podUID", pod.UID, "phase", st.Phase)
	return nil
}

// pendingStarts are the containers of a pod that its last sync could not
// start, for its next status (podstatus.Input.BackOff and StartFailures).
type pendingStarts struct {
	// backOff: restarts deferred by the crash-loop back-off, with the
	// waiting message (CrashLoopBackOff).
	backOff map[string]string
	// failures: starts that failed, with the kubelet's reason and message
	// (ErrImagePull, ImagePullBackOff, CreateContainerConfigError, ...).
	failures map[string]v1.ContainerStateWaiting
}

// noteStartFailures remembers, from the error of a sync of the pod, which
// of its containers wait for their crash-loop back-off
// (runtime.BackOffError) and which failed to start (runtime.StartError),
// for the next status, as the kubelet's reason cache does. Each sync
// replaces what the previous one noted: a container it started, or did
// not try to, shows no reason any more. It reports whether that changed
// what the status shows.
func (a *Agent) noteStartFailures(uid types.UID, err error) bool {
	var p pendingStarts
	if b := runtime.BackOffs(err); len(b) > 0 {
		p.backOff = b
	}
	if fs := runtime.StartFailures(err); len(fs) > 0 {
		p.failures = make(map[string]v1.ContainerStateWaiting, len(fs))
		for name, f := range fs {
			p.failures[name] = v1.ContainerStateWaiting{Reason: f.ReasonText(), Message: f.Message}
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	old := a.pending[uid]
	if p.backOff == nil && p.failures == nil {
		delete(a.pending, uid)
	} else {
		a.pending[uid] = p
	}
	return !maps.Equal(old.backOff, p.backOff) || !maps.Equal(old.failures, p.failures)
}

// onlyStartFailures reports whether every error joined in err is about a
// container that could not start (a runtime.StartError or
// runtime.BackOffError), nothing else.
func onlyStartFailures(err error) bool {
	var branches []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		branches = j.Unwrap()
	} else {
		branches = []error{err}
	}
	for _, b := range branches {
		var se *runtime.StartError
		var be *runtime.BackOffError
		if !errors.As(b, &se) && !errors.As(b, &be) {
			return false
		}
	}
	return len(branches) > 0
}

// podContentRemovable reports whether a terminated pod's containers,
// sandboxes and logs may be removed now: the pod is being deleted or was
// evicted (the kubelet's ShouldPodContentBeRemoved), it is no longer one
// of the agent's pods, or it could only have ended by being killed
// (RestartPolicy Always: a pod recreated with the same UID while it
// terminated restarts, and must not find the dead sandbox and containers
// of its earlier life). Pods that run to completion (Never, OnFailure)
// keep theirs while they are desired.
func (a *Agent) podContentRemovable(pod *v1.Pod) bool {
	if pod.DeletionTimestamp != nil || a.workers.ShouldPodContentBeRemoved(pod.UID) {
		return true
	}
	if p := pod.Spec.RestartPolicy; p != v1.RestartPolicyNever && p != v1.RestartPolicyOnFailure {
		return true
	}
	_, desired := a.pods.GetPodByUID(pod.UID)
	return !desired
}

// removeRuntimePod removes the containers and sandboxes of a terminated
// pod; something found running again is stopped, and the removal retried
// at the next sync.
func (s *syncer) removeRuntimePod(ctx context.Context, pod *v1.Pod) error {
	a := s.a
	rp := &runtime.Pod{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	if err := a.rt.RemovePod(ctx, rp); err != nil {
		if errors.Is(err, runtime.ErrFailedPrecondition) {
			// Something runs again (a runtime restarted it behind our
			// back): stop it, and retry the removal next time.
			one := int64(1)
			if kerr := a.rt.KillPod(ctx, pod, nil, &one); kerr != nil {
				err = errors.Join(err, kerr)
			}
		}
		return fmt.Errorf("remove pod %s: %w", podRef(pod), err)
	}
	return nil
}
