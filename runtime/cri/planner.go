package cri

import (
	"fmt"
	"math"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
)

// planInput is everything planSync reads: no runtime, no clock but now.
type planInput struct {
	pod    *v1.Pod
	status *runtime.PodStatus
	// backOff is read, never recorded: the executor records restarts.
	backOff backOffView
	// started is the startup-probe gate of sidecars; nil: a running
	// sidecar has started.
	started func(podUID types.UID, containerName string) bool
	now     time.Time
}

// planSync decides one SyncPod, as the kubelet's computePodActions does,
// from the pod's spec, its runtime status (newest first, as GetPodStatus
// sorts it), the back-off and the time. It is pure: the same input gives
// the same plan, and it calls nothing of the runtime. The rules are those
// SyncPod's doc comment lists.
func planSync(in planInput) *syncPlan {
	pod, st := in.pod, in.status
	policy := restartPolicy(pod)
	p := &syncPlan{}

	sandbox := newestSandbox(st)
	p.CreateSandbox = sandbox == nil || sandbox.State != runtime.SandboxStateReady
	if sandbox != nil {
		p.SandboxID, p.Attempt = sandbox.ID, sandbox.Attempt
	}
	if p.CreateSandbox {
		p.SandboxReason = "no sandbox"
		if sandbox != nil {
			if policy == v1.RestartPolicyNever && len(st.ContainerStatuses) > 0 {
				p.Idle = "sandbox " + shortID(sandbox.ID) + " is gone and RestartPolicy Never: the pod ran and must not restart"
				return p
			}
			if policy == v1.RestartPolicyOnFailure && allSucceeded(pod, st) {
				p.Idle = "sandbox " + shortID(sandbox.ID) + " is gone and RestartPolicy OnFailure: every container succeeded"
				return p
			}
			// Nothing of the old sandbox may keep running.
			p.SandboxReason = "sandbox dead: " + string(sandbox.State)
			p.OldSandboxID = sandbox.ID
			for _, cs := range st.ContainerStatuses {
				if cs.State != runtime.ContainerStateExited {
					p.KillFirst = append(p.KillFirst, containerKill{ID: cs.ID.ID, Name: cs.Name, Reason: reasonSandboxDead,
						Grace: gracePeriodOf(pod), Created: cs.State == runtime.ContainerStateCreated})
				}
			}
			p.Attempt++
		}
		p.SandboxID = ""
	}
	// Instances created before the current sandbox ran in an older one.
	sandboxCreated := int64(math.MaxInt64) // a new sandbox has none yet
	if !p.CreateSandbox {
		sandboxCreated = sandbox.CreatedAt.UnixNano()
	}
	planInit(in, p, sandboxCreated, policy)
	// Regular containers wait for the init containers; a pod whose init
	// container failed for good (Never) starts nothing more.
	if p.Initialized {
		counts := 0
		for i := range pod.Spec.Containers {
			s := planContainer(in, p, &pod.Spec.Containers[i], sandboxCreated, policy)
			if s.Counts {
				counts++
			}
			p.Containers = append(p.Containers, s)
		}
		// Ephemeral containers do not count: a pod whose regular
		// containers are all done has finished, and the sandbox's stop
		// ends a debugger still running in it.
		p.Finished = counts == 0
	}
	planEphemeral(in, p, sandboxCreated)
	return p
}

// planContainer decides for one regular container.
func planContainer(in planInput, p *syncPlan, c *v1.Container, sandboxCreated int64, policy v1.RestartPolicy) containerStep {
	pod, st := in.pod, in.status
	s := containerStep{Name: c.Name}
	cs := st.FindContainerStatusByName(c.Name)
	if cs != nil {
		s.RestartCount = cs.RestartCount + 1
	}
	start := func(why string) containerStep {
		s.Action, s.Why, s.Counts = actStart, why, true
		if cs != nil {
			s.Prune = deadInstances(st, c.Name, cs.ID.ID)
		}
		return s
	}
	succeeded := func() bool {
		return policy == v1.RestartPolicyOnFailure && cs.State == runtime.ContainerStateExited && cs.ExitCode == 0
	}
	if cs != nil && !p.CreateSandbox && len(pod.Spec.InitContainers) > 0 && cs.CreatedAt.UnixNano() < sandboxCreated {
		// It ran in an older sandbox; this one's init containers have just
		// completed: it starts afresh here, unless it succeeded under
		// OnFailure.
		if succeeded() {
			s.Why = "succeeded in an older sandbox"
			return s
		}
		cs = nil
		return start("ran in an older sandbox")
	}
	switch {
	case cs == nil:
		return start("no instance")
	case p.CreateSandbox:
		if succeeded() {
			s.Why = "succeeded"
			return s
		}
		return start("new sandbox")
	}
	switch cs.State {
	case runtime.ContainerStateRunning:
		if cs.Hash == 0 || cs.Hash == runtime.HashContainer(c) {
			s.Action, s.Why, s.Counts = actKeep, "running", true
			return s
		}
		// Created from an older spec (its image changed, say): replace it,
		// with no back-off, as the kubelet does.
		s.Kill = &containerKill{ID: cs.ID.ID, Name: c.Name, Reason: reasonSpecChanged, Grace: gracePeriodOf(pod)}
		return start("replaces the old spec's instance")
	case runtime.ContainerStateCreated:
		s.Action, s.Why, s.CreatedID, s.Counts = actStartCreated, "created, not started", cs.ID.ID, true
		return s
	case runtime.ContainerStateExited, runtime.ContainerStateUnknown:
		if !shouldRestart(policy, cs) {
			s.Why = string(cs.State) + ", not restarted under " + string(policy)
			if cs.State == runtime.ContainerStateExited {
				s.Why = exitWhy(cs) + ", not restarted under " + string(policy)
			}
			return s
		}
		planRestart(in, &s, c, cs)
		s.Counts = true
		return s
	}
	return start("state " + string(cs.State))
}

// planRestart fills s for a new instance of a dead (exited or unknown)
// container, after its crash-loop back-off; one in an unknown state is
// stopped first.
func planRestart(in planInput, s *containerStep, c *v1.Container, cs *runtime.ContainerStatus) {
	s.Restart, s.ExitCode, s.RestartCount = true, cs.ExitCode, cs.RestartCount+1
	s.Why = exitWhy(cs)
	if cs.State == runtime.ContainerStateUnknown {
		s.Why = "unknown state"
		s.Kill = &containerKill{ID: cs.ID.ID, Name: c.Name, Reason: reasonUnknownState}
	}
	s.BackOffKey = backOffKey(in.pod, c.Name)
	if in.backOff != nil {
		s.BackOff = in.backOff.waitAt(s.BackOffKey, cs.FinishedAt, in.now)
	}
	if s.BackOff > 0 {
		s.Action = actBackOff
		return
	}
	s.Action = actStart
	s.Prune = deadInstances(in.status, c.Name, cs.ID.ID)
}

func exitWhy(cs *runtime.ContainerStatus) string {
	if cs.State == runtime.ContainerStateExited {
		return fmt.Sprintf("exited %d", cs.ExitCode)
	}
	return string(cs.State)
}

// deadInstances are the exited instances of a container but keep: those a
// restart removes (the newest dead one is kept for its logs and exit code).
func deadInstances(st *runtime.PodStatus, name, keep string) []string {
	var out []string
	for _, cs := range st.ContainerStatuses {
		if cs.Name == name && cs.ID.ID != keep && cs.State == runtime.ContainerStateExited {
			out = append(out, cs.ID.ID)
		}
	}
	return out
}

func restartPolicy(pod *v1.Pod) v1.RestartPolicy {
	if pod.Spec.RestartPolicy == "" {
		return v1.RestartPolicyAlways
	}
	return pod.Spec.RestartPolicy
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
