package cri

import (
	"k8s.io/apimachinery/pkg/types"

	v1 "k8s.io/api/core/v1"

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

// planInit plans the pod's init containers, in order, as the kubelet's
// computePodActions does, and sets p.Initialized or p.InitFailed:
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
func planInit(in planInput, p *syncPlan, sandboxCreated int64, policy v1.RestartPolicy) {
	pod, st := in.pod, in.status
	if len(pod.Spec.InitContainers) == 0 {
		p.Initialized = true
		return
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
		cs := inSandbox(st, c.Name, sandboxCreated)
		sidecar := isSidecar(c)
		s := containerStep{Name: c.Name, Init: true}
		add := func(a stepAction, why string) { s.Action, s.Why = a, why; p.Init = append(p.Init, s) }
		if !sidecar && initialized {
			add(actNone, "pod initialized")
			continue
		}
		switch {
		case cs == nil:
			// Not run in this sandbox yet: start it, and wait for it (an
			// initialized pod's sidecar never holds the regular containers).
			if prev := st.FindContainerStatusByName(c.Name); prev != nil {
				s.RestartCount = prev.RestartCount + 1
			}
			add(actStart, "not run in this sandbox")
			if initialized {
				continue
			}
			return
		case cs.State == runtime.ContainerStateCreated:
			s.CreatedID = cs.ID.ID
			add(actStartCreated, "created, not started")
			if initialized {
				continue
			}
			return
		case cs.State == runtime.ContainerStateRunning:
			if !sidecar {
				add(actWait, "running") // wait for it to finish
				return
			}
			if !initialized && c.StartupProbe != nil && in.started != nil && !in.started(pod.UID, c.Name) {
				add(actWait, "startup probe not passed")
				return
			}
			add(actKeep, "running")
			continue
		case sidecar:
			// An exited (or unknown) sidecar restarts, unless the pod's
			// regular containers are all done for good.
			if regularDone {
				add(actNone, exitWhy(cs)+", regular containers finished")
				continue
			}
			planRestart(in, &s, c, cs)
			p.Init = append(p.Init, s)
			if initialized {
				continue // a crash-looping sidecar does not hold the others
			}
			return
		case cs.State == runtime.ContainerStateExited && cs.ExitCode == 0:
			add(actNone, "succeeded") // the next one
			continue
		default: // failed (or unknown)
			if policy == v1.RestartPolicyNever {
				add(actNone, exitWhy(cs)+", not restarted under Never")
				p.InitFailed = true
				return
			}
			planRestart(in, &s, c, cs)
			p.Init = append(p.Init, s)
			return
		}
	}
	p.Initialized = true
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
