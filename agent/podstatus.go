package agent

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/runtime"
)

// Reasons the agent writes into container and pod statuses.
const (
	reasonContainerCreating = "ContainerCreating"
	reasonStatusUnknown     = "ContainerStatusUnknown"
	exitCodeKilled          = 137
)

// generateStatus derives the API status of pod from what the runtime shows
// (the kubelet's generateAPIPodStatus, reduced to what podlife runs).
// terminal says that no container runs or will run any more (the pod is
// terminated): containers that did not finish are then reported as killed
// and the phase is Succeeded or Failed.
func generateStatus(pod *v1.Pod, st *runtime.PodStatus, terminal bool) v1.PodStatus {
	out := v1.PodStatus{}
	if st == nil {
		st = &runtime.PodStatus{ID: pod.UID}
	}
	for _, ip := range st.IPs {
		out.PodIPs = append(out.PodIPs, v1.PodIP{IP: ip})
	}
	if len(out.PodIPs) > 0 {
		out.PodIP = out.PodIPs[0].IP
	}
	var start *metav1.Time
	for _, sb := range st.SandboxStatuses {
		if !sb.CreatedAt.IsZero() && (start == nil || sb.CreatedAt.Before(start.Time)) {
			t := metav1.NewTime(sb.CreatedAt)
			start = &t
		}
	}
	out.StartTime = start

	ready := len(pod.Spec.Containers) > 0
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cs := containerStatus(c, st.FindContainerStatusByName(c.Name), terminal)
		ready = ready && cs.Ready
		out.ContainerStatuses = append(out.ContainerStatuses, cs)
	}
	out.Phase = podPhase(pod, out.ContainerStatuses, terminal)
	cond := func(t v1.PodConditionType, ok bool) v1.PodCondition {
		s := v1.ConditionFalse
		if ok {
			s = v1.ConditionTrue
		}
		return v1.PodCondition{Type: t, Status: s}
	}
	ready = ready && !terminal && out.Phase == v1.PodRunning
	out.Conditions = []v1.PodCondition{
		cond(v1.PodScheduled, true),
		cond(v1.PodInitialized, true),
		cond(v1.ContainersReady, ready),
		cond(v1.PodReady, ready),
	}
	return out
}

func containerStatus(c *v1.Container, rs *runtime.ContainerStatus, terminal bool) v1.ContainerStatus {
	cs := v1.ContainerStatus{Name: c.Name, Image: c.Image}
	if rs == nil {
		if terminal {
			cs.State.Terminated = &v1.ContainerStateTerminated{ExitCode: exitCodeKilled, Reason: reasonStatusUnknown,
				Message: "The container could not be located when the pod was terminated"}
		} else {
			cs.State.Waiting = &v1.ContainerStateWaiting{Reason: reasonContainerCreating}
		}
		return cs
	}
	cs.ContainerID = rs.ID.String()
	cs.ImageID = rs.ImageID
	cs.RestartCount = int32(rs.RestartCount)
	if rs.Image != "" {
		cs.Image = rs.Image
	}
	switch rs.State {
	case runtime.ContainerStateRunning:
		if terminal {
			cs.State.Terminated = &v1.ContainerStateTerminated{ExitCode: exitCodeKilled, Reason: reasonStatusUnknown,
				StartedAt: metav1.NewTime(rs.StartedAt), ContainerID: cs.ContainerID}
			break
		}
		cs.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(rs.StartedAt)}
		cs.Ready = true
		started := true
		cs.Started = &started
	case runtime.ContainerStateExited:
		reason := rs.Reason
		if reason == "" {
			reason = "Completed"
			if rs.ExitCode != 0 {
				reason = "Error"
			}
		}
		cs.State.Terminated = &v1.ContainerStateTerminated{ExitCode: int32(rs.ExitCode), Reason: reason, Message: rs.Message,
			StartedAt: metav1.NewTime(rs.StartedAt), FinishedAt: metav1.NewTime(rs.FinishedAt), ContainerID: cs.ContainerID}
	default: // created or unknown
		if terminal {
			cs.State.Terminated = &v1.ContainerStateTerminated{ExitCode: exitCodeKilled, Reason: reasonStatusUnknown, ContainerID: cs.ContainerID}
		} else {
			cs.State.Waiting = &v1.ContainerStateWaiting{Reason: reasonContainerCreating}
		}
	}
	return cs
}

// podPhase is the kubelet's getPhase for regular containers. A terminated
// pod always gets a terminal phase, static pods included (the kubelet
// exempts static pods, kubernetes#116484; podlife does not).
func podPhase(pod *v1.Pod, statuses []v1.ContainerStatus, terminal bool) v1.PodPhase {
	var waiting, running, succeeded, failed int
	for _, cs := range statuses {
		switch {
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			succeeded++
		case cs.State.Terminated != nil:
			failed++
		default:
			waiting++
		}
	}
	n := len(statuses)
	switch {
	case terminal:
		if n > 0 && succeeded == n {
			return v1.PodSucceeded
		}
		return v1.PodFailed
	case waiting > 0: // one or more containers has not started yet
		return v1.PodPending
	case running > 0:
		return v1.PodRunning
	case n == 0:
		return v1.PodPending
	}
	// Every container has exited.
	switch pod.Spec.RestartPolicy {
	case v1.RestartPolicyNever:
		if failed > 0 {
			return v1.PodFailed
		}
		return v1.PodSucceeded
	case v1.RestartPolicyOnFailure:
		if failed == 0 {
			return v1.PodSucceeded
		}
		return v1.PodRunning
	default: // Always (the API default): restarting
		return v1.PodRunning
	}
}
