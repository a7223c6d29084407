package podstatus

import (
	v1 "k8s.io/api/core/v1"
)

// shouldRestart is the kubelet's ContainerShouldRestart (with the
// ContainerRestartRules feature, on by default since 1.35): the container's
// own restart rules and policy first, then the pod's restart policy.
func shouldRestart(c *v1.Container, spec *v1.PodSpec, exitCode int32) bool {
	if c.RestartPolicy != nil {
		for _, rule := range c.RestartPolicyRules {
			if rule.ExitCodes == nil || !matches(rule.ExitCodes, exitCode) {
				continue
			}
			if rule.Action == v1.ContainerRestartRuleActionRestart {
				return true
			}
			break // another action: the container's policy decides
		}
		switch *c.RestartPolicy {
		case v1.ContainerRestartPolicyAlways:
			return true
		case v1.ContainerRestartPolicyOnFailure:
			return exitCode != 0
		case v1.ContainerRestartPolicyNever:
			return false
		}
	}
	switch spec.RestartPolicy {
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	case v1.RestartPolicyNever:
		return false
	default: // Always, the API default
		return true
	}
}

func matches(r *v1.ContainerRestartRuleOnExitCodes, code int32) bool {
	in := false
	for _, v := range r.Values {
		if v == code {
			in = true
			break
		}
	}
	switch r.Operator {
	case v1.ContainerRestartRuleOnExitCodesOpIn:
		return in
	case v1.ContainerRestartRuleOnExitCodesOpNotIn:
		return !in
	}
	return false
}

func findStatus(list []v1.ContainerStatus, name string) *v1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// phase is the kubelet's getPhase (1.37, with ContainerRestartRules) over
// the generated statuses. initialized says that a regular container was
// created in the current sandbox, so sidecars restarting do not send the
// pod back to Pending.
//
// One difference: once every regular container has stopped for good, the
// pod is Succeeded or Failed even while a sidecar still runs. The kubelet
// reports Running until its runtime manager stops the sidecars; in podlife
// the pod worker stops them, and only once a sync reports the terminal
// phase. The status reporter still holds the terminal phase back from the
// API until no container runs.
func phase(pod *v1.Pod, s *v1.PodStatus, terminal, initialized bool) v1.PodPhase {
	spec := &pod.Spec
	var pendingInit, pendingSidecars, failedInitForGood int
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if isSidecar(c) {
			continue
		}
		st := findStatus(s.InitContainerStatuses, c.Name)
		switch {
		case st == nil:
			pendingInit++
		case st.State.Running != nil:
			pendingInit++
		case st.State.Terminated != nil:
			if code := st.State.Terminated.ExitCode; code != 0 && !shouldRestart(c, spec, code) {
				failedInitForGood++
			}
		case st.State.Waiting != nil && st.LastTerminationState.Terminated != nil:
			if code := st.LastTerminationState.Terminated.ExitCode; code != 0 && !shouldRestart(c, spec, code) {
				failedInitForGood++
			}
		default:
			pendingInit++
		}
	}

	var unknown, running, waiting, stopped, stoppedForGood, succeeded, sidecarsRunning int
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if !isSidecar(c) {
			continue
		}
		st := findStatus(s.InitContainerStatuses, c.Name)
		switch {
		case st == nil:
			unknown++
		case st.State.Running != nil:
			if st.Started == nil || !*st.Started {
				pendingSidecars++
			}
			running++
			sidecarsRunning++
		case st.State.Terminated != nil:
			// A stopped sidecar does not count.
		case st.State.Waiting != nil && st.LastTerminationState.Terminated != nil:
			// Nor does one waiting to restart.
		default:
			pendingSidecars++
			waiting++
		}
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		st := findStatus(s.ContainerStatuses, c.Name)
		var last *v1.ContainerStateTerminated
		switch {
		case st == nil:
			unknown++
			continue
		case st.State.Running != nil:
			running++
			continue
		case st.State.Terminated != nil:
			last = st.State.Terminated
		case st.State.Waiting != nil && st.LastTerminationState.Terminated != nil:
			last = st.LastTerminationState.Terminated
		case st.State.Waiting != nil:
			waiting++
			continue
		default:
			unknown++
			continue
		}
		stopped++
		if !shouldRestart(c, spec, last.ExitCode) {
			stoppedForGood++
		}
		if st.State.Terminated != nil && last.ExitCode == 0 {
			succeeded++
		}
	}

	if failedInitForGood > 0 {
		return v1.PodFailed
	}
	// Every regular container stopped for good: running sidecars do not
	// hold the pod's completion (see above).
	if len(spec.Containers) > 0 && stopped == len(spec.Containers) && stoppedForGood == stopped &&
		running == sidecarsRunning && pendingInit == 0 {
		running = 0
	}
	switch {
	case pendingInit > 0 || (pendingSidecars > 0 && !initialized) || waiting > 0:
		return v1.PodPending
	case running > 0 && unknown == 0:
		return v1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if terminal || stopped == stoppedForGood {
			if stopped == succeeded {
				return v1.PodSucceeded
			}
			return v1.PodFailed
		}
		return v1.PodRunning // at least one is restarting
	default:
		return v1.PodPending
	}
}
