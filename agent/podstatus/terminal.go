package podstatus

import (
	v1 "k8s.io/api/core/v1"
)

// terminate is the kubelet's TerminatePod, for a pod none of whose
// containers runs or will run: the phase becomes terminal (Failed unless it
// already is), and containers that did not finish are reported as
// terminated with ContainerStatusUnknown, exit 137 — but, as the seed's
// rule says, only the containers that could have run:
//   - regular containers only once the pod was initialized (a pod whose
//     init containers have not all run keeps them Waiting, PodInitializing);
//   - init containers only up to the last one that was attempted: the ones
//     after it were never started and stay Waiting. (The kubelet also marks
//     the first init container when none was attempted; podlife does not:
//     it never ran.)
//
// Static pods get a terminal phase too (the kubelet exempts them,
// kubernetes#116484; podlife does not).
func terminate(pod *v1.Pod, s *v1.PodStatus) {
	unknown := func(st *v1.ContainerStatus) {
		st.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			Reason: ReasonStatusUnknown, Message: msgNotLocatedTerminated, ExitCode: ExitCodeUnknown}}
		st.Ready = false
		f := false
		st.Started = &f
	}
	if initialized(pod, s) {
		for i := range s.ContainerStatuses {
			if s.ContainerStatuses[i].State.Terminated == nil {
				unknown(&s.ContainerStatuses[i])
			}
		}
	}
	for i := range attempted(s.InitContainerStatuses) {
		if s.InitContainerStatuses[i].State.Terminated == nil {
			unknown(&s.InitContainerStatuses[i])
		}
	}
	if !isTerminal(s.Phase) {
		s.Phase = v1.PodFailed
	}
}

// initialized is the kubelet's hasPodInitialized over the generated status:
// a pod without init containers is; so is one with a regular container that
// ever left Waiting, or whose last init container succeeded (a sidecar:
// started).
func initialized(pod *v1.Pod, s *v1.PodStatus) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	for i := range s.ContainerStatuses {
		st := &s.ContainerStatuses[i]
		if st.LastTerminationState.Terminated != nil || st.State.Waiting == nil {
			return true
		}
	}
	n := len(pod.Spec.InitContainers)
	last := &pod.Spec.InitContainers[n-1]
	st := findStatus(s.InitContainerStatuses, last.Name)
	if st == nil {
		return false
	}
	if isSidecar(last) {
		return st.State.Running != nil && st.Started != nil && *st.Started
	}
	for _, t := range []*v1.ContainerStateTerminated{st.State.Terminated, st.LastTerminationState.Terminated} {
		if t != nil && t.ExitCode == 0 {
			return true
		}
	}
	return false
}

// attempted returns the init container statuses up to the last one with
// evidence of a start (not Waiting, or Waiting after a previous run).
func attempted(list []v1.ContainerStatus) []v1.ContainerStatus {
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].State.Waiting == nil || list[i].LastTerminationState.Terminated != nil {
			return list[:i+1]
		}
	}
	return nil
}
