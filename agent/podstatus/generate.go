package podstatus

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/runtime"
)

// Generate returns the API status of in.Pod, as the kubelet's
// generateAPIPodStatus and its status manager would write it: container,
// init container and ephemeral container statuses, phase, conditions with stable
// lastTransitionTimes, IPs, startTime, QoS class and observedGeneration. It
// is pure: the same input gives the same status, and the only time it uses
// is in.Now.
func Generate(in Input) v1.PodStatus {
	pod := in.Pod
	rt := in.Runtime
	if rt == nil {
		rt = &runtime.PodStatus{ID: pod.UID}
	}
	old := in.Previous
	if old == nil {
		old = &pod.Status
	}
	g := &generator{in: in, pod: pod, rt: rt, old: old, instances: instancesByName(rt)}

	var s v1.PodStatus
	s.QOSClass = QOSClass(pod)
	s.ContainerStatuses = g.containerStatuses(pod.Spec.Containers, old.ContainerStatuses, kindRegular)
	s.InitContainerStatuses = g.containerStatuses(pod.Spec.InitContainers, old.InitContainerStatuses, kindInit)
	// Ephemeral containers have no probes, and count for neither the
	// phase nor a condition: started stays unset and ready false, as the
	// kubelet's prober manager leaves them.
	s.EphemeralContainerStatuses = g.containerStatuses(ephemeralContainers(pod), old.EphemeralContainerStatuses, kindEphemeral)
	g.applyProbes(s.ContainerStatuses, s.InitContainerStatuses)

	s.Phase = phase(pod, &s, in.Terminal, g.activeRegularContainerStarted())
	// A terminal phase, once reached (here or in the API), is kept: the
	// API server refuses to leave one, even for the other.
	switch {
	case isTerminal(pod.Status.Phase):
		s.Phase = pod.Status.Phase
	case isTerminal(old.Phase):
		s.Phase = old.Phase
	}
	if in.Terminal {
		terminate(pod, &s)
	}
	if s.Phase == old.Phase {
		s.Reason, s.Message = old.Reason, old.Message
		if s.Reason == "" {
			s.Reason = pod.Status.Reason
		}
		if s.Message == "" {
			s.Message = pod.Status.Message
		}
	}

	s.Conditions = g.conditions(&s)
	g.setIPs(&s)

	s.ObservedGeneration = max(pod.Generation, old.ObservedGeneration)
	switch {
	case old.StartTime != nil && !old.StartTime.IsZero():
		t := *old.StartTime
		s.StartTime = &t
	case !in.Now.IsZero():
		t := metav1.NewTime(in.Now)
		s.StartTime = &t
	}
	normalize(pod, &s)
	return s
}

// generator carries one call's inputs between the steps of Generate.
type generator struct {
	in  Input
	pod *v1.Pod
	rt  *runtime.PodStatus
	old *v1.PodStatus
	// instances are the runtime's instances of each container, newest first.
	instances map[string][]*runtime.ContainerStatus
}

func isTerminal(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

// isSidecar reports whether an init container is restartable (a sidecar).
func isSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// normalize truncates timestamps to seconds (what the API stores, so that a
// status compares equal to itself read back) and bounds termination messages
// to the kubelet's budget.
func normalize(pod *v1.Pod, s *v1.PodStatus) {
	budget := maxTerminationMessage
	if n := len(pod.Spec.Containers) + len(pod.Spec.InitContainers) + len(pod.Spec.EphemeralContainers); n > 0 {
		budget /= n
	}
	ts := func(t *metav1.Time) { *t = t.Rfc3339Copy() }
	state := func(c *v1.ContainerState) {
		if c.Running != nil {
			ts(&c.Running.StartedAt)
		}
		if c.Terminated != nil {
			ts(&c.Terminated.StartedAt)
			ts(&c.Terminated.FinishedAt)
			if len(c.Terminated.Message) > budget {
				c.Terminated.Message = c.Terminated.Message[:budget]
			}
		}
	}
	if s.StartTime != nil {
		ts(s.StartTime)
	}
	for i := range s.Conditions {
		ts(&s.Conditions[i].LastProbeTime)
		ts(&s.Conditions[i].LastTransitionTime)
	}
	for _, list := range [][]v1.ContainerStatus{s.ContainerStatuses, s.InitContainerStatuses, s.EphemeralContainerStatuses} {
		for i := range list {
			state(&list[i].State)
			state(&list[i].LastTerminationState)
		}
	}
}
