package podstatus

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/runtime"
)

// Messages of PodReadyToStartContainers when False, as the kubelet's.
const (
	msgNoSandbox         = "no pod sandbox exists"
	msgMultipleSandboxes = "multiple pod sandboxes are ready and need to be reconciled"
	msgSandboxNotReady   = "pod sandbox is not ready"
	msgNoIP              = "pod sandbox has no IP address"
)

// ownedConditions are the condition types the kubelet (so Generate) owns;
// the others found in the pod's API status are kept as they are.
var ownedConditions = []v1.PodConditionType{
	v1.PodScheduled, v1.PodReady, v1.PodInitialized, v1.ContainersReady,
	v1.PodReadyToStartContainers, v1.PodResizeInProgress, v1.PodResizePending,
	v1.AllContainersRestarting,
}

func owned(t v1.PodConditionType) bool {
	for _, o := range ownedConditions {
		if o == t {
			return true
		}
	}
	return false
}

func findCondition(list []v1.PodCondition, t v1.PodConditionType) *v1.PodCondition {
	for i := range list {
		if list[i].Type == t {
			return &list[i]
		}
	}
	return nil
}

// conditions returns the pod's conditions, in the kubelet's order: those
// other components own (from the API status; readiness gates read them),
// DisruptionTarget as last published, then PodReadyToStartContainers,
// Initialized, Ready, ContainersReady and PodScheduled. A condition keeps
// its lastTransitionTime while its status does not change.
func (g *generator) conditions(s *v1.PodStatus) []v1.PodCondition {
	var out []v1.PodCondition
	for _, c := range g.pod.Status.Conditions {
		if !owned(c.Type) {
			out = append(out, *c.DeepCopy())
		}
	}
	if dt := findCondition(g.old.Conditions, v1.DisruptionTarget); dt != nil {
		if have := findCondition(out, v1.DisruptionTarget); have != nil {
			*have = *dt.DeepCopy()
		} else {
			out = append(out, *dt.DeepCopy())
		}
	}
	all := append(append([]v1.ContainerStatus{}, s.InitContainerStatuses...), s.ContainerStatuses...)
	containersReady := g.containersReady(all, s.Phase)
	generated := []v1.PodCondition{
		g.readyToStart(),
		g.initializedCondition(all, s.Phase),
		g.ready(containersReady, out),
		containersReady,
		{Type: v1.PodScheduled, Status: v1.ConditionTrue},
	}
	now := metav1.NewTime(g.in.Now)
	for i := range generated {
		c := &generated[i]
		c.ObservedGeneration = g.pod.Generation
		c.LastTransitionTime = now
		if prev := findCondition(g.old.Conditions, c.Type); prev != nil && prev.Status == c.Status && !prev.LastTransitionTime.IsZero() {
			c.LastTransitionTime = prev.LastTransitionTime
		}
	}
	return append(out, generated...)
}

func cond(t v1.PodConditionType, ok bool, reason, message string) v1.PodCondition {
	c := v1.PodCondition{Type: t, Status: v1.ConditionFalse, Reason: reason, Message: message}
	if ok {
		c.Status, c.Reason, c.Message = v1.ConditionTrue, "", ""
	}
	return c
}

// readyToStart is PodReadyToStartContainers: True once the newest sandbox
// is ready, the only ready one, and has its network (an IP, or the node's
// network). The kubelet also wants the sandbox's network namespace mode to
// match spec.hostNetwork; podlife's runtime may run every pod on the node
// network (runtime/cri's NetworkModeNode), so that counts as networked.
func (g *generator) readyToStart() v1.PodCondition {
	var newest *runtime.SandboxStatus
	ready := 0
	for _, sb := range g.rt.SandboxStatuses {
		if sb == nil {
			continue
		}
		if sb.State == runtime.SandboxStateReady {
			ready++
		}
		if newest == nil || sb.CreatedAt.After(newest.CreatedAt) ||
			(sb.CreatedAt.Equal(newest.CreatedAt) && sb.Attempt > newest.Attempt) {
			newest = sb
		}
	}
	msg := ""
	switch {
	case newest == nil:
		msg = msgNoSandbox
	case ready > 1:
		msg = msgMultipleSandboxes
	case newest.State != runtime.SandboxStateReady:
		msg = msgSandboxNotReady
	case !g.pod.Spec.HostNetwork && newest.Network != "node" && len(newest.IPs) == 0:
		msg = msgNoIP
	}
	return cond(v1.PodReadyToStartContainers, msg == "", ReasonSandboxNotReady, msg)
}

// containersReady is ContainersReady: every regular container and sidecar
// ready. False with PodCompleted or PodFailed in a terminal phase.
func (g *generator) containersReady(all []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	var unknown, unready []string
	check := func(name string) {
		st := findStatus(all, name)
		switch {
		case st == nil:
			unknown = append(unknown, name)
		case !st.Ready:
			unready = append(unready, name)
		}
	}
	for i := range g.pod.Spec.InitContainers {
		if isSidecar(&g.pod.Spec.InitContainers[i]) {
			check(g.pod.Spec.InitContainers[i].Name)
		}
	}
	for i := range g.pod.Spec.Containers {
		check(g.pod.Spec.Containers[i].Name)
	}
	switch {
	case phase == v1.PodSucceeded && len(unknown) == 0:
		return cond(v1.ContainersReady, false, ReasonPodCompleted, "")
	case phase == v1.PodFailed:
		return cond(v1.ContainersReady, false, ReasonPodFailed, "")
	}
	msg := notReadyMessage(unknown, "unknown", unready, "unready")
	return cond(v1.ContainersReady, msg == "", ReasonContainersNotReady, msg)
}

func notReadyMessage(a []string, aWhat string, b []string, bWhat string) string {
	var parts []string
	if len(a) > 0 {
		parts = append(parts, fmt.Sprintf("containers with %s status: %s", aWhat, a))
	}
	if len(b) > 0 {
		parts = append(parts, fmt.Sprintf("containers with %s status: %s", bWhat, b))
	}
	return strings.Join(parts, ", ")
}

// ready is Ready: ContainersReady, and every readiness gate's condition
// True.
func (g *generator) ready(containersReady v1.PodCondition, others []v1.PodCondition) v1.PodCondition {
	if containersReady.Status != v1.ConditionTrue {
		c := containersReady
		c.Type = v1.PodReady
		return c
	}
	var msgs []string
	for _, rg := range g.pod.Spec.ReadinessGates {
		c := findCondition(others, rg.ConditionType)
		switch {
		case c == nil:
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(rg.ConditionType)))
		case c.Status != v1.ConditionTrue:
			msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(rg.ConditionType), c.Status))
		}
	}
	msg := strings.Join(msgs, ", ")
	return cond(v1.PodReady, msg == "", ReasonReadinessGates, msg)
}

// initializedCondition is Initialized: every init container succeeded (a
// sidecar: started), or a regular container already ran.
func (g *generator) initializedCondition(all []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	var unknown, incomplete []string
	for i := range g.pod.Spec.InitContainers {
		c := &g.pod.Spec.InitContainers[i]
		st := findStatus(all, c.Name)
		switch {
		case st == nil:
			unknown = append(unknown, c.Name)
		case isSidecar(c) && (st.Started == nil || !*st.Started):
			incomplete = append(incomplete, c.Name)
		case !isSidecar(c) && !st.Ready:
			incomplete = append(incomplete, c.Name)
		}
	}
	if phase == v1.PodSucceeded && len(unknown) == 0 {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue, Reason: ReasonPodCompleted}
	}
	for i := range g.pod.Spec.Containers {
		if st := findStatus(all, g.pod.Spec.Containers[i].Name); st != nil && (st.State.Running != nil || st.State.Terminated != nil) {
			return cond(v1.PodInitialized, true, "", "")
		}
	}
	msg := notReadyMessage(unknown, "unknown", incomplete, "incomplete")
	return cond(v1.PodInitialized, msg == "", ReasonNotInitialized, msg)
}

// NeedsReadinessReconcile reports whether the Ready condition in pod's
// status disagrees with its readiness gates, as the kubelet's
// NeedToReconcilePodReadiness: the pod has readiness gates, its status has
// a Ready condition, and Ready computed from the status's ContainersReady
// condition and the gates' conditions there differs in status or message.
// Another component set a gate's condition; the pod needs a sync so that
// its Ready condition follows.
func NeedsReadinessReconcile(pod *v1.Pod) bool {
	if pod == nil || len(pod.Spec.ReadinessGates) == 0 {
		return false
	}
	cur := findCondition(pod.Status.Conditions, v1.PodReady)
	if cur == nil {
		return false
	}
	containersReady := cond(v1.ContainersReady, false, "", "")
	if c := findCondition(pod.Status.Conditions, v1.ContainersReady); c != nil {
		containersReady = *c
	}
	var others []v1.PodCondition
	for _, c := range pod.Status.Conditions {
		if !owned(c.Type) {
			others = append(others, c)
		}
	}
	want := (&generator{pod: pod}).ready(containersReady, others)
	return want.Status != cur.Status || want.Message != cur.Message
}
