package cri

import (
	"context"
	"errors"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime"
)

// SyncPod implements runtime.Runtime.
//
//   - No ready sandbox: a new one is created (attempt+1), after stopping
//     whatever still runs of the pod, and every container is started in it,
//     except, under RestartPolicy OnFailure, those that succeeded. A pod with
//     RestartPolicy Never whose sandbox died after its containers ran, or
//     with OnFailure whose containers all succeeded, is left alone.
//   - Ready sandbox: a container with no instance yet is created and started;
//     an exited one is restarted when the restart policy says so (Always;
//     OnFailure and a non-zero exit code), unless it is in crash-loop back-off,
//     which gives an error wrapping runtime.ErrBackOff. A created but not
//     started instance is started. An instance in an unknown state is stopped
//     and restarted. A running container whose recorded spec hash differs
//     from its spec's (runtime.HashContainer) is stopped with the pod's grace
//     period and replaced; other running containers are left as they are.
//   - Init containers run first, in order, each to success, and sidecars
//     (restartable init containers) start in their turn; regular
//     containers start once they are done (syncInitContainers). In a new
//     sandbox they run again.
//   - After a restart, older dead instances of the container are removed; the
//     newest dead one is kept (for its logs and exit code).
//   - When no container runs and none is to be (re)started or waits for its
//     back-off, every container has finished for good: the sandbox is
//     stopped, so that the pod's status becomes terminal.
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
	var sandboxID string
	attempt := uint32(0)
	if sandbox != nil {
		sandboxID, attempt = sandbox.ID, sandbox.Attempt
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
		sandboxID = id
	}
	sandboxCfg := r.sandboxConfig(pod, attempt)
	// Instances created before the current sandbox ran in an older one.
	sandboxCreated := int64(math.MaxInt64) // a new sandbox has none yet
	if !createSandbox {
		sandboxCreated = sandbox.CreatedAt.UnixNano()
	}
	init := r.syncInitContainers(ctx, pod, podStatus, sandboxID, sandboxCfg, sandboxCreated, policy)
	errs := init.errs
	if !init.initialized {
		// Regular containers wait for the init containers; a pod whose init
		// container failed for good (Never) starts nothing more, and its
		// status says Failed.
		return errors.Join(errs...)
	}

	keep := 0 // regular containers left running or started by this sync
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("container %q of pod %s: %w", c.Name, podRef(pod), errors.Join(runtime.ErrCanceled, err)))
			break
		}
		cs := podStatus.FindContainerStatusByName(c.Name)
		restartCount := 0
		if cs != nil {
			restartCount = cs.RestartCount + 1
		}
		backOffKey := string(pod.UID) + "/" + c.Name
		if cs != nil && !createSandbox && len(pod.Spec.InitContainers) > 0 && cs.CreatedAt.UnixNano() < sandboxCreated {
			// It ran in an older sandbox; this one's init containers have
			// just completed: it starts afresh here, unless it succeeded
			// under OnFailure.
			if policy == v1.RestartPolicyOnFailure && cs.State == runtime.ContainerStateExited && cs.ExitCode == 0 {
				continue
			}
			cs = nil
		}
		if cs != nil && createSandbox {
			if policy == v1.RestartPolicyOnFailure && cs.State == runtime.ContainerStateExited && cs.ExitCode == 0 {
				continue
			}
		} else if cs != nil {
			switch cs.State {
			case runtime.ContainerStateRunning:
				if cs.Hash == 0 || cs.Hash == runtime.HashContainer(c) {
					keep++
					continue
				}
				// Created from an older spec (its image changed, say):
				// replace it, with no back-off, as the kubelet does.
				r.log.V(2).Info("container spec changed; restarting it", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name)
				t := hookTarget{pod: pod, name: c.Name, id: cs.ID.ID, sandboxID: sandboxID}
				if err := r.killOne(ctx, t, preStopOf(c), gracePeriodOf(pod)); err != nil {
					errs = append(errs, fmt.Errorf("container %q of pod %s: %w", c.Name, podRef(pod), err))
					continue
				}
			case runtime.ContainerStateCreated:
				if err := r.startCreated(ctx, cs.ID.ID); err != nil {
					errs = append(errs, fmt.Errorf("container %q of pod %s: %w", c.Name, podRef(pod), err))
				}
				keep++
				continue
			case runtime.ContainerStateExited, runtime.ContainerStateUnknown:
				if !shouldRestart(policy, cs) {
					continue
				}
				if cs.State == runtime.ContainerStateUnknown {
					if err := r.stopContainer(ctx, cs.ID.ID, 0); err != nil {
						errs = append(errs, fmt.Errorf("container %q of pod %s: %w", c.Name, podRef(pod), err))
						continue
					}
				}
				if wait := r.backOff.wait(backOffKey, cs.FinishedAt); wait > 0 {
					errs = append(errs, fmt.Errorf("container %q of pod %s exited with %d: %w", c.Name, podRef(pod), cs.ExitCode, backOffError(pod, c.Name, wait)))
					continue
				}
				r.backOff.next(backOffKey)
			}
		}
		if err := r.startContainer(ctx, pod, c, sandboxID, sandboxCfg, restartCount); err != nil {
			errs = append(errs, err)
			continue
		}
		keep++
		if cs != nil {
			r.pruneDead(ctx, podStatus, c.Name, cs.ID.ID)
		}
	}
	if keep == 0 && len(errs) == 0 {
		// Every container has finished for good: the sandbox goes too, so
		// that the pod's status becomes terminal (the kubelet does the same).
		r.log.V(2).Info("all containers finished; stopping the sandbox", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID)
		if err := r.stopSandbox(ctx, sandboxID); err != nil {
			errs = append(errs, fmt.Errorf("sync pod %s: %w", podRef(pod), err))
		}
	}
	return errors.Join(errs...)
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
