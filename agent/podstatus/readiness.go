package podstatus

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WithContainerReadiness returns st with the ready flag of one running
// container instance changed, and the ContainersReady and Ready conditions
// that follow from it, as the kubelet's status manager does in
// SetContainerReadiness: for a readiness probe result that arrives while
// the pod worker is busy (a pod terminating, its containers given their
// grace period). The instance is named by container name and runtime ID
// (with or without the "type://" prefix of a status's containerID); a
// regular container or a sidecar. A condition whose status changes gets now
// as its last transition time (to the second, as Generate's). It reports
// false, and st unchanged, when the instance is not running in st, already
// has that readiness, or st has a terminal phase.
func WithContainerReadiness(pod *v1.Pod, st v1.PodStatus, name, containerID string, ready bool, now time.Time) (v1.PodStatus, bool) {
	if pod == nil || st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed {
		return st, false
	}
	out := *st.DeepCopy()
	cs := findStatus(out.ContainerStatuses, name)
	if cs == nil {
		cs = findStatus(out.InitContainerStatuses, name)
	}
	if cs == nil || cs.State.Running == nil || cs.Ready == ready || !sameInstance(cs.ContainerID, containerID) {
		return st, false
	}
	cs.Ready = ready
	g := &generator{pod: pod}
	all := append(append([]v1.ContainerStatus{}, out.InitContainerStatuses...), out.ContainerStatuses...)
	containersReady := g.containersReady(all, out.Phase)
	var others []v1.PodCondition
	for _, c := range out.Conditions {
		if !owned(c.Type) {
			others = append(others, c)
		}
	}
	readyCond := g.ready(containersReady, others)
	at := metav1.NewTime(now.Truncate(time.Second))
	for _, c := range []v1.PodCondition{containersReady, readyCond} {
		c.ObservedGeneration = pod.Generation
		c.LastTransitionTime = at
		if prev := findCondition(out.Conditions, c.Type); prev != nil {
			if prev.Status == c.Status && !prev.LastTransitionTime.IsZero() {
				c.LastTransitionTime = prev.LastTransitionTime
			}
			*prev = c
		} else {
			out.Conditions = append(out.Conditions, c)
		}
	}
	return out, true
}

// sameInstance reports whether a status's containerID and id name the same
// runtime ID, each with or without its "type://" prefix.
func sameInstance(statusID, id string) bool {
	strip := func(s string) string {
		if i := strings.Index(s, "://"); i >= 0 {
			return s[i+3:]
		}
		return s
	}
	return id != "" && strip(statusID) == strip(id)
}
