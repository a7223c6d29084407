package cri

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime"
)

// Ephemeral containers (kubectl debug).
//
// The API adds them to a running pod through the pods/ephemeralcontainers
// subresource; they are never removed or changed. As in the kubelet, each
// is started once, once the pod's sandbox exists, and never again, whatever
// the pod's restart policy: an exited one stays exited. It runs with what a
// regular container gets (image and pull credentials, environment, mounts,
// security context) and, with a targetContainerName, in the PID namespace
// of that container's newest instance. It counts for nothing else: not for
// the pod's initialization, completion or restarts.

// containerList is one list of a pod's containers and its field in the
// spec.
type containerList struct {
	field string
	cs    []v1.Container
}

// podContainerLists are the pod's init and regular containers: those that
// make up the pod, checked with it by validatePod. Ephemeral containers
// are checked one by one, when they start (validateEphemeral).
func podContainerLists(pod *v1.Pod) []containerList {
	return []containerList{{"spec.initContainers", pod.Spec.InitContainers}, {"spec.containers", pod.Spec.Containers}}
}

// asContainer is an ephemeral container as a Container (the kubelet's
// conversion: the two types have the same fields), sharing its memory.
func asContainer(ec *v1.EphemeralContainer) *v1.Container {
	return (*v1.Container)(&ec.EphemeralContainerCommon)
}

// findEphemeral returns the pod's ephemeral container of that name, or nil.
func findEphemeral(pod *v1.Pod, name string) *v1.EphemeralContainer {
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return &pod.Spec.EphemeralContainers[i]
		}
	}
	return nil
}

// planEphemeral plans the pod's ephemeral containers, as the kubelet's
// computePodActions does: one with no instance is started, unless a new
// sandbox is being created (it starts in the next sync, once the sandbox
// exists) or the pod has failed or finished (nothing more starts); one
// with an instance is never started again. The one exception: an instance
// created in the current sandbox but never started (the start failed, or
// the agent stopped in between) is started, as for any container (the
// kubelet leaves it; with containerd a failed start leaves it exited, so
// the two agree).
func planEphemeral(in planInput, p *syncPlan, sandboxCreated int64) {
	pod, st := in.pod, in.status
	done := p.InitFailed || p.Finished
	for i := range pod.Spec.EphemeralContainers {
		ec := &pod.Spec.EphemeralContainers[i]
		s := containerStep{Name: ec.Name, Ephemeral: true}
		cs := st.FindContainerStatusByName(ec.Name)
		switch {
		case cs != nil && cs.State == runtime.ContainerStateRunning && !p.CreateSandbox:
			s.Action, s.Why = actKeep, "running"
		case cs != nil && cs.State == runtime.ContainerStateCreated && !p.CreateSandbox && !done && cs.CreatedAt.UnixNano() >= sandboxCreated:
			s.Action, s.Why, s.CreatedID = actStartCreated, "created, not started", cs.ID.ID
		case cs != nil && cs.State == runtime.ContainerStateExited:
			s.Why = exitWhy(cs) + ", never restarted"
		case cs != nil && p.CreateSandbox:
			s.Why = string(cs.State) + " in the old sandbox, never restarted"
		case cs != nil:
			s.Why = string(cs.State) + ", never restarted"
		case p.CreateSandbox:
			s.Why = "waits for the new sandbox"
		case p.InitFailed:
			s.Why = "the pod failed"
		case p.Finished:
			s.Why = "the pod finished"
		default:
			s.Action, s.Why = actStart, "no instance"
			s.Target = ec.TargetContainerName
			if t := st.FindContainerStatusByName(s.Target); s.Target != "" && t != nil {
				s.TargetID = t.ID.ID
			}
		}
		p.Ephemeral = append(p.Ephemeral, s)
	}
}

// validateEphemeral checks one ephemeral container (index i of the spec)
// as validatePod checks the others: a name and an image, what
// validateContainerFields, validateSecurity and validateVolumes refuse, the
// volumes it mounts, its target. The API server's validation already
// refuses ports, probes, lifecycle handlers and resources in one.
func validateEphemeral(pod *v1.Pod, i int) error {
	ec := &pod.Spec.EphemeralContainers[i]
	c := asContainer(ec)
	path := fmt.Sprintf("spec.ephemeralContainers[%d]", i)
	var errs []error
	if c.Image == "" {
		errs = append(errs, fmt.Errorf("%s.image: required", path))
	}
	errs = append(errs, containerFieldErrors(pod, path, c)...)
	errs = append(errs, containerSecurityErrors(path, c)...)
	byName := map[string]*v1.Volume{}
	index := map[string]int{}
	for j := range pod.Spec.Volumes {
		byName[pod.Spec.Volumes[j].Name], index[pod.Spec.Volumes[j].Name] = &pod.Spec.Volumes[j], j
	}
	errs = append(errs, volumeMountErrors(byName, path, c)...)
	for _, m := range c.VolumeMounts {
		if v := byName[m.Name]; v != nil && !isServiceAccountVolume(v) {
			if p := volumeProblem(index[m.Name], v); p != "" {
				errs = append(errs, fmt.Errorf("%s; %s mounts it", p, path))
			}
		}
	}
	if t := ec.TargetContainerName; t != "" {
		found := false
		for _, list := range podContainerLists(pod) {
			for j := range list.cs {
				found = found || list.cs[j].Name == t
			}
		}
		if !found {
			errs = append(errs, fmt.Errorf("%s.targetContainerName: no container %q in the pod", path, t))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("ephemeral container %q: %w", ec.Name, err)
	}
	return nil
}

// checkEphemeral is validateEphemeral for this adapter (what its options
// provider takes over is its business, as in checkPod), then the target:
// a step to start an ephemeral container whose target has no instance
// cannot (the kubelet's "unable to find target container"). Its errors
// wrap runtime.ErrFailedPrecondition: the start is a
// CreateContainerConfigError, tried again at the next sync.
func (r *Runtime) checkEphemeral(pod *v1.Pod, s containerStep) error {
	view := providerView(pod, r.optionsProvider())
	for i := range view.Spec.EphemeralContainers {
		if view.Spec.EphemeralContainers[i].Name == s.Name {
			if err := validateEphemeral(view, i); err != nil {
				return failedPrecondition(err)
			}
		}
	}
	if s.Target != "" && s.TargetID == "" {
		return failedPrecondition(fmt.Errorf("unable to find target container %s", s.Target))
	}
	return nil
}
