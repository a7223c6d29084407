package cri

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

// SyncPod implements runtime.Runtime.
//
//   - No ready sandbox: a new one is created (attempt+1), after stopping
//     whatever still runs of the pod. A pod with RestartPolicy Never whose
//     sandbox died after its containers ran, or with OnFailure whose
//     containers all succeeded, is left alone. Init containers run again in
//     the new sandbox.
//   - Init containers (pod.Spec.InitContainers) run first, one at a time, in
//     order, each to success before the next starts. A failed one is
//     restarted with the crash-loop back-off, except under RestartPolicy
//     Never: then the pod has failed, nothing more starts, whatever runs is
//     stopped and so is the sandbox (the status shows the init container
//     exited non-zero). In a sandbox where a regular container was already
//     created, init containers never run again.
//   - Sidecars (init containers with restartPolicy Always) start in their
//     place in the init order; the next init container or sidecar starts
//     once the sidecar is started: running, and, when Options.Started is
//     set, Started(pod UID, name) true (the startup-probe gate). Sidecars
//     are restarted whenever they exit, whatever the pod's restart policy,
//     with the crash-loop back-off.
//   - Regular containers start once every init container succeeded and
//     every sidecar started. A container with no instance in the sandbox
//     yet is created and started; an exited one is restarted when the
//     restart policy says so (Always; OnFailure and a non-zero exit code),
//     unless it is in crash-loop back-off, which gives an error wrapping
//     runtime.ErrBackOff. A created but not started instance is started. An
//     instance in an unknown state is stopped and restarted. A running
//     container whose recorded spec hash differs from its spec's
//     (runtime.HashContainer) is stopped with the pod's grace period and
//     replaced; other running containers are left as they are.
//   - After a restart, older dead instances of the container are removed; the
//     newest dead one is kept (for its logs and exit code).
//   - When no regular container runs and none is to be (re)started or waits
//     for its back-off, every container has finished for good: the sidecars
//     are stopped in reverse order, then the sandbox, so that the pod's
//     status becomes terminal. Sidecars never hold a Never/OnFailure pod's
//     completion.
//
// podStatus must be at least as new as the previous SyncPod of the pod (the
// pod workers' Cache.GetNewerThan gives that), or nil to read it now: with
// older data SyncPod may try to create an instance that exists already and
// fail with runtime.ErrAlreadyExists until it sees fresh data.
//
// The errors of all containers are joined; each names pod and container.
func (r *Runtime) SyncPod(ctx context.Context, pod *v1.Pod, podStatus *runtime.PodStatus) error {
	if err := validatePod(pod); err != nil {
		return err
	}
	if podStatus == nil {
		st, err := r.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			return fmt.Errorf("sync pod %s: %w", podRef(pod), err)
		}
		podStatus = st
	}
	policy := pod.Spec.RestartPolicy
	if policy == "" {
		policy = v1.RestartPolicyAlways
	}

	sandbox := newestSandbox(podStatus)
	createSandbox := sandbox == nil || sandbox.State != runtime.SandboxStateReady
	s := &podSync{r: r, pod: pod, st: podStatus, policy: policy, fresh: createSandbox}
	attempt := uint32(0)
	if sandbox != nil {
		s.sandboxID, s.sandboxCreated, attempt = sandbox.ID, sandbox.CreatedAt, sandbox.Attempt
	}
	if createSandbox {
		if sandbox != nil {
			if policy == v1.RestartPolicyNever && len(podStatus.ContainerStatuses) > 0 {
				return nil // it ran, its sandbox is gone, and it must not restart
			}
			if policy == v1.RestartPolicyOnFailure && allSucceeded(pod, podStatus) {
				return nil // nothing would start in a new sandbox
			}
			// Nothing of the old sandbox may keep running.
			if err := r.killContainers(ctx, pod, podStatus, nil); err != nil {
				return fmt.Errorf("sync pod %s: stop containers of dead sandbox %q: %w", podRef(pod), sandbox.ID, err)
			}
			attempt++
		}
		id, err := r.runSandbox(ctx, pod, r.sandboxConfig(pod, attempt))
		if err != nil {
			return err
		}
		s.sandboxID = id
	}
	s.sandboxCfg = r.sandboxConfig(pod, attempt)

	if !createSandbox && s.regularsDone() {
		return s.finish(ctx)
	}
	initDone, initFailed, errs := s.syncInit(ctx)
	if initFailed {
		r.log.V(2).Info("init container failed and the pod does not restart; stopping the pod", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID)
		return errors.Join(append(errs, s.finish(ctx))...)
	}
	if !initDone {
		return errors.Join(errs...)
	}
	keep, regErrs := s.syncRegular(ctx)
	errs = append(errs, regErrs...)
	if keep == 0 && len(errs) == 0 {
		return s.finish(ctx)
	}
	return errors.Join(errs...)
}

// podSync is one SyncPod of a pod in one sandbox.
type podSync struct {
	r              *Runtime
	pod            *v1.Pod
	st             *runtime.PodStatus
	policy         v1.RestartPolicy
	sandboxID      string
	sandboxCreated time.Time
	sandboxCfg     *runtimeapi.PodSandboxConfig
	fresh          bool // the sandbox was created by this sync
}

// current is the newest instance of the named container in the sandbox, or
// nil. An instance whose sandbox is not known counts when it is not older
// than the sandbox.
func (s *podSync) current(name string) *runtime.ContainerStatus {
	if s.fresh {
		return nil
	}
	var found *runtime.ContainerStatus
	for _, cs := range s.st.ContainerStatuses {
		if cs.Name != name {
			continue
		}
		if cs.SandboxID != "" && cs.SandboxID != s.sandboxID || cs.SandboxID == "" && cs.CreatedAt.Before(s.sandboxCreated) {
			continue
		}
		if found == nil || cs.CreatedAt.After(found.CreatedAt) {
			found = cs
		}
	}
	return found
}

// restartCount of the next instance of the named container.
func (s *podSync) restartCount(name string) int {
	if cs := s.st.FindContainerStatusByName(name); cs != nil {
		return cs.RestartCount + 1
	}
	return 0
}

func (s *podSync) wrap(c *v1.Container, err error) error {
	return fmt.Errorf("container %q of pod %s: %w", c.Name, podRef(s.pod), err)
}

// regularsDone reports whether every regular container has an instance in
// the sandbox that exited and must not restart.
func (s *podSync) regularsDone() bool {
	for i := range s.pod.Spec.Containers {
		cs := s.current(s.pod.Spec.Containers[i].Name)
		if cs == nil || cs.State != runtime.ContainerStateExited || shouldRestart(s.policy, cs) {
			return false
		}
	}
	return true
}

// initialized: a regular container was created in the sandbox already.
func (s *podSync) initialized() bool {
	for i := range s.pod.Spec.Containers {
		if s.current(s.pod.Spec.Containers[i].Name) != nil {
			return true
		}
	}
	return false
}

// startedAfter: a container after init container i was created in the
// sandbox (so the sidecar at i was started once and no longer gates).
func (s *podSync) startedAfter(i int) bool {
	for _, c := range s.pod.Spec.InitContainers[i+1:] {
		if s.current(c.Name) != nil {
			return true
		}
	}
	return s.initialized()
}

// syncInit runs the init containers and sidecars. done: the regular
// containers may run; failed: an init container failed under
// RestartPolicy Never.
func (s *podSync) syncInit(ctx context.Context) (done, failed bool, errs []error) {
	initialized := s.initialized()
	for i := range s.pod.Spec.InitContainers {
		c := &s.pod.Spec.InitContainers[i]
		if err := ctx.Err(); err != nil {
			return false, false, append(errs, s.wrap(c, errors.Join(runtime.ErrCanceled, err)))
		}
		cur := s.current(c.Name)
		if isSidecar(c) {
			started, err := s.syncSidecar(ctx, c, cur)
			if err != nil {
				errs = append(errs, err)
			}
			if !started && !s.startedAfter(i) {
				return false, false, errs
			}
			continue
		}
		if initialized {
			continue
		}
		switch {
		case cur == nil:
			if err := s.start(ctx, c); err != nil {
				errs = append(errs, err)
			}
			return false, false, errs
		case cur.State == runtime.ContainerStateRunning:
			return false, false, errs
		case cur.State == runtime.ContainerStateCreated:
			if err := s.r.startCreated(ctx, cur.ID.ID); err != nil {
				errs = append(errs, s.wrap(c, err))
			}
			return false, false, errs
		case cur.State == runtime.ContainerStateExited && cur.ExitCode == 0:
			continue
		case s.policy == v1.RestartPolicyNever:
			return false, true, errs
		default:
			if err := s.restart(ctx, c, cur); err != nil {
				errs = append(errs, err)
			}
			return false, false, errs
		}
	}
	return true, false, errs
}

// syncSidecar keeps one sidecar running and reports whether it counts as
// started.
func (s *podSync) syncSidecar(ctx context.Context, c *v1.Container, cur *runtime.ContainerStatus) (bool, error) {
	var err error
	switch {
	case cur == nil:
		err = s.start(ctx, c)
	case cur.State == runtime.ContainerStateRunning:
		if cur.Hash != 0 && cur.Hash != runtime.HashContainer(c) {
			err = s.replace(ctx, c, cur)
		}
	case cur.State == runtime.ContainerStateCreated:
		if err = s.r.startCreated(ctx, cur.ID.ID); err != nil {
			err = s.wrap(c, err)
		}
	default: // exited or unknown: a sidecar always restarts
		err = s.restart(ctx, c, cur)
	}
	if err != nil {
		return false, err
	}
	return s.r.opts.Started == nil || s.r.opts.Started(s.pod.UID, c.Name), nil
}

// syncRegular runs the regular containers; keep counts those left running
// or started.
func (s *podSync) syncRegular(ctx context.Context) (keep int, errs []error) {
	for i := range s.pod.Spec.Containers {
		c := &s.pod.Spec.Containers[i]
		if err := ctx.Err(); err != nil {
			errs = append(errs, s.wrap(c, errors.Join(runtime.ErrCanceled, err)))
			break
		}
		cur := s.current(c.Name)
		var err error
		switch {
		case cur == nil:
			// Under OnFailure, a container that succeeded in an older
			// sandbox does not run again.
			if prev := s.st.FindContainerStatusByName(c.Name); prev != nil && s.policy == v1.RestartPolicyOnFailure &&
				prev.State == runtime.ContainerStateExited && prev.ExitCode == 0 {
				continue
			}
			err = s.start(ctx, c)
		case cur.State == runtime.ContainerStateRunning:
			if cur.Hash == 0 || cur.Hash == runtime.HashContainer(c) {
				keep++
				continue
			}
			err = s.replace(ctx, c, cur)
		case cur.State == runtime.ContainerStateCreated:
			if err := s.r.startCreated(ctx, cur.ID.ID); err != nil {
				errs = append(errs, s.wrap(c, err))
			}
			keep++
			continue
		default:
			if !shouldRestart(s.policy, cur) {
				continue
			}
			err = s.restart(ctx, c, cur)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		keep++
	}
	return keep, errs
}

// start creates and starts a new instance, then removes the older dead
// ones but the newest.
func (s *podSync) start(ctx context.Context, c *v1.Container) error {
	if err := s.r.startContainer(ctx, s.pod, c, s.sandboxID, s.sandboxCfg, s.restartCount(c.Name)); err != nil {
		return err
	}
	if prev := s.st.FindContainerStatusByName(c.Name); prev != nil {
		s.r.pruneDead(ctx, s.st, c.Name, prev.ID.ID)
	}
	return nil
}

// replace stops a running instance created from an older spec (its image
// changed, say) and starts a new one, with no back-off, as the kubelet does.
func (s *podSync) replace(ctx context.Context, c *v1.Container, cur *runtime.ContainerStatus) error {
	s.r.log.V(2).Info("container spec changed; restarting it", "pod", s.pod.Namespace+"/"+s.pod.Name, "container", c.Name)
	t := target{id: cur.ID.ID, name: c.Name, spec: findContainer(s.pod, c.Name), pod: s.pod, sandboxID: s.sandboxID}
	if err := s.r.stopTargets(ctx, []target{t}, func(target) int64 { return gracePeriodOf(s.pod) }); err != nil {
		return s.wrap(c, err)
	}
	return s.start(ctx, c)
}

// restart starts a new instance of an exited (or unknown) one, once its
// crash-loop back-off allows.
func (s *podSync) restart(ctx context.Context, c *v1.Container, cur *runtime.ContainerStatus) error {
	if cur.State == runtime.ContainerStateUnknown {
		if err := s.r.stopContainer(ctx, cur.ID.ID, 0); err != nil {
			return s.wrap(c, err)
		}
	}
	key := backOffKey(s.pod, c.Name)
	if wait := s.r.backOff.wait(key, cur.FinishedAt); wait > 0 {
		s.r.event(s.pod, v1.EventTypeWarning, EventBackOff, "Back-off restarting failed container %s in pod %s", c.Name, podDesc(s.pod))
		return fmt.Errorf("container %q of pod %s exited with %d; restart in %s: %w", c.Name, podRef(s.pod), cur.ExitCode, wait.Round(1e6), runtime.ErrBackOff)
	}
	s.r.backOff.next(key)
	return s.start(ctx, c)
}

func backOffKey(pod *v1.Pod, name string) string { return string(pod.UID) + "/" + name }

// finish stops what still runs of the pod in the sandbox (sidecars, in
// reverse order, after everything else), then the sandbox, so that the
// pod's status becomes terminal (the kubelet does the same).
func (s *podSync) finish(ctx context.Context) error {
	s.r.log.V(2).Info("all containers finished; stopping the sandbox", "pod", s.pod.Namespace+"/"+s.pod.Name, "podUID", s.pod.UID)
	var ts []target
	for _, cs := range s.st.ContainerStatuses {
		if cs.State != runtime.ContainerStateExited && (s.fresh || s.current(cs.Name) == cs) {
			ts = append(ts, target{id: cs.ID.ID, name: cs.Name, typ: containerType(s.pod, cs.Name), index: containerIndex(s.pod, cs.Name), spec: findContainer(s.pod, cs.Name), pod: s.pod, sandboxID: s.sandboxID})
		}
	}
	errs := []error{s.r.stopOrdered(ctx, ts, func(target) int64 { return gracePeriodOf(s.pod) })}
	if err := s.r.stopSandbox(ctx, s.sandboxID); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sync pod %s: %w", podRef(s.pod), err)
	}
	return nil
}

// allSucceeded reports whether every container of the spec last exited 0.
func allSucceeded(pod *v1.Pod, st *runtime.PodStatus) bool {
	for i := range pod.Spec.Containers {
		cs := st.FindContainerStatusByName(pod.Spec.Containers[i].Name)
		if cs == nil || cs.State != runtime.ContainerStateExited || cs.ExitCode != 0 {
			return false
		}
	}
	return true
}

func shouldRestart(policy v1.RestartPolicy, cs *runtime.ContainerStatus) bool {
	switch policy {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return cs.State == runtime.ContainerStateUnknown || cs.ExitCode != 0
	default:
		return true
	}
}

// pruneDead removes the dead instances of a container except keep. Failures
// are only logged: the next RemovePod takes them anyway.
func (r *Runtime) pruneDead(ctx context.Context, podStatus *runtime.PodStatus, name, keep string) {
	for _, cs := range podStatus.ContainerStatuses {
		if cs.Name != name || cs.ID.ID == keep || cs.State != runtime.ContainerStateExited {
			continue
		}
		if err := r.removeContainer(ctx, cs.ID.ID); err != nil {
			r.log.V(4).Info("could not remove dead container", "pod", podStatus.Namespace+"/"+podStatus.Name, "container", name, "err", err)
		}
	}
}

// gracePeriodOf is the pod's grace period, or DefaultGracePeriod.
func gracePeriodOf(pod *v1.Pod) int64 {
	if gp := podGracePeriod(pod); gp != nil {
		return *gp
	}
	return DefaultGracePeriod
}
