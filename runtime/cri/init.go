package cri

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

// isSidecar reports whether an init container is a sidecar (a restartable
// init container: restartPolicy Always).
func isSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// sidecarNames returns the pod's sidecars by name, with their order.
func sidecarNames(pod *v1.Pod) map[string]int {
	out := map[string]int{}
	if pod == nil {
		return out
	}
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			out[pod.Spec.InitContainers[i].Name] = i
		}
	}
	return out
}

// inSandbox returns the newest instance of the named container created in
// the current sandbox (created at or after sandboxCreated), or nil: the
// instances of an older sandbox do not count, so that init containers run
// again in a new sandbox.
func inSandbox(st *runtime.PodStatus, name string, sandboxCreated int64) *runtime.ContainerStatus {
	cs := st.FindContainerStatusByName(name)
	if cs == nil || cs.CreatedAt.UnixNano() < sandboxCreated {
		return nil
	}
	return cs
}

// initStep is what syncInitContainers did.
type initStep struct {
	// initialized: every init container that must succeed has, and every
	// sidecar has started; regular containers may run.
	initialized bool
	// failed: an init container failed and the restart policy (Never) says
	// it will not run again: the pod has failed; nothing more starts.
	failed bool
	// keep counts the sidecars left running or started.
	keep int
	errs []error
}

// syncInitContainers runs the pod's init containers in order, as the
// kubelet's computePodActions does:
//
//   - an init container runs to success before the next one starts; a
//     failed one is restarted with the crash-loop back-off, unless the pod's
//     restart policy is Never: then the pod has failed;
//   - a sidecar (restartPolicy Always) starts in its turn, and the next
//     init container starts once it runs (and, when Options.Started is set,
//     once that says it started: the startup-probe gate); it is restarted
//     whenever it exits, whatever the pod's restart policy, except once
//     every regular container has finished for good (it never holds a
//     Never or OnFailure pod's completion);
//   - once regular containers have run in this sandbox the pod is
//     initialized: init containers do not run again until a new sandbox.
func (r *Runtime) syncInitContainers(ctx context.Context, pod *v1.Pod, st *runtime.PodStatus, sandboxID string, sandboxCfg *runtimeapi.PodSandboxConfig, sandboxCreated int64, policy v1.RestartPolicy) initStep {
	var step initStep
	if len(pod.Spec.InitContainers) == 0 {
		step.initialized = true
		return step
	}
	// Regular containers already ran in this sandbox: initialization is over.
	initialized := false
	for i := range pod.Spec.Containers {
		if inSandbox(st, pod.Spec.Containers[i].Name, sandboxCreated) != nil {
			initialized = true
		}
	}
	regularDone := initialized && regularFinished(pod, st, sandboxCreated, policy)
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if err := ctx.Err(); err != nil {
			step.errs = append(step.errs, fmt.Errorf("init container %q of pod %s: %w", c.Name, podRef(pod), err))
			return step
		}
		cs := inSandbox(st, c.Name, sandboxCreated)
		sidecar := isSidecar(c)
		if !sidecar && initialized {
			continue
		}
		switch {
		case cs == nil:
			// Not run in this sandbox yet: start it, and wait for it (an
			// initialized pod's sidecar never holds the regular containers).
			r.startInit(ctx, pod, c, st, sandboxID, sandboxCfg, &step)
			if initialized {
				continue
			}
			return step
		case cs.State == runtime.ContainerStateCreated:
			if err := r.startCreated(ctx, cs.ID.ID); err != nil {
				step.errs = append(step.errs, fmt.Errorf("init container %q of pod %s: %w", c.Name, podRef(pod), err))
			}
			if sidecar {
				step.keep++
			}
			if initialized {
				continue
			}
			return step
		case cs.State == runtime.ContainerStateRunning:
			if !sidecar {
				return step // wait for it to finish
			}
			step.keep++
			if !initialized && c.StartupProbe != nil && !r.started(pod.UID, c.Name) {
				return step // its startup probe has not passed yet
			}
			continue
		case sidecar:
			// An exited (or unknown) sidecar restarts, unless the pod's
			// regular containers are all done for good.
			if regularDone {
				continue
			}
			if !r.restartInit(ctx, pod, c, cs, st, sandboxID, sandboxCfg, &step) {
				if initialized {
					continue // a crash-looping sidecar does not hold the others
				}
				return step
			}
			step.keep++
			if !initialized {
				return step
			}
		case cs.State == runtime.ContainerStateExited && cs.ExitCode == 0:
			continue // succeeded: the next one
		default: // failed (or unknown)
			if policy == v1.RestartPolicyNever {
				step.failed = true
				return step
			}
			r.restartInit(ctx, pod, c, cs, st, sandboxID, sandboxCfg, &step)
			return step
		}
	}
	step.initialized = true
	return step
}

// startInit creates and starts an init container that has no instance in
// this sandbox.
func (r *Runtime) startInit(ctx context.Context, pod *v1.Pod, c *v1.Container, st *runtime.PodStatus, sandboxID string, sandboxCfg *runtimeapi.PodSandboxConfig, step *initStep) {
	restartCount := 0
	if prev := st.FindContainerStatusByName(c.Name); prev != nil {
		restartCount = prev.RestartCount + 1
	}
	if err := r.startContainer(ctx, pod, c, sandboxID, sandboxCfg, restartCount); err != nil {
		step.errs = append(step.errs, err)
		return
	}
	if isSidecar(c) {
		step.keep++
	}
}

// restartInit starts a new instance of an init container or sidecar that
// exited, after its crash-loop back-off; it reports whether it started one.
func (r *Runtime) restartInit(ctx context.Context, pod *v1.Pod, c *v1.Container, cs *runtime.ContainerStatus, st *runtime.PodStatus, sandboxID string, sandboxCfg *runtimeapi.PodSandboxConfig, step *initStep) bool {
	if cs.State == runtime.ContainerStateUnknown {
		if err := r.stopContainer(ctx, cs.ID.ID, 0); err != nil {
			step.errs = append(step.errs, fmt.Errorf("init container %q of pod %s: %w", c.Name, podRef(pod), err))
			return false
		}
	}
	key := string(pod.UID) + "/" + c.Name
	if wait := r.backOff.wait(key, cs.FinishedAt); wait > 0 {
		step.errs = append(step.errs, fmt.Errorf("init container %q of pod %s exited with %d: %w", c.Name, podRef(pod), cs.ExitCode, backOffError(pod, c.Name, wait)))
		return false
	}
	r.backOff.next(key)
	if err := r.startContainer(ctx, pod, c, sandboxID, sandboxCfg, cs.RestartCount+1); err != nil {
		step.errs = append(step.errs, err)
		return false
	}
	r.pruneDead(ctx, st, c.Name, cs.ID.ID)
	return true
}

// regularFinished reports whether every regular container ran in this
// sandbox and has finished for good (exited, and the restart policy will
// not restart it).
func regularFinished(pod *v1.Pod, st *runtime.PodStatus, sandboxCreated int64, policy v1.RestartPolicy) bool {
	for i := range pod.Spec.Containers {
		cs := inSandbox(st, pod.Spec.Containers[i].Name, sandboxCreated)
		if cs == nil || cs.State != runtime.ContainerStateExited || shouldRestart(policy, cs) {
			return false
		}
	}
	return true
}

// startedFunc holds the startup-probe gate (Options.Started, SetStarted).
type startedFunc struct {
	f func(podUID types.UID, containerName string) bool
}

// SetStarted replaces Options.Started: f tells whether a running sidecar
// with a startup probe has passed it (runtime/prober's Manager.Started).
// The agent calls it with its prober. nil: a running sidecar has started.
func (r *Runtime) SetStarted(f func(podUID types.UID, containerName string) bool) {
	if f == nil {
		r.startedGate.Store(nil)
		return
	}
	r.startedGate.Store(&startedFunc{f})
}

// started asks the startup-probe gate; true without one.
func (r *Runtime) started(uid types.UID, name string) bool {
	if g := r.startedGate.Load(); g != nil {
		return g.f(uid, name)
	}
	return true
}
