package shutdown

import (
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
)

// group is one priority group of a shutdown and the pods it stops.
type group struct {
	PriorityGracePeriod
	pods []*v1.Pod
}

// groups returns the groups of o, lowest priority first.
func groups(o Options) []PriorityGracePeriod {
	if len(o.ShutdownGracePeriodByPodPriority) > 0 {
		out := slices.Clone(o.ShutdownGracePeriodByPodPriority)
		slices.SortFunc(out, func(a, b PriorityGracePeriod) int {
			switch {
			case a.Priority < b.Priority:
				return -1
			case a.Priority > b.Priority:
				return 1
			}
			return 0
		})
		return out
	}
	critical := int64(o.ShutdownGracePeriodCriticalPods / time.Second)
	total := int64(o.ShutdownGracePeriod / time.Second)
	return []PriorityGracePeriod{
		{Priority: DefaultPriority, ShutdownGracePeriodSeconds: total - critical},
		{Priority: SystemCriticalPriority, ShutdownGracePeriodSeconds: critical},
	}
}

// budget is the time all the groups may take together.
func budget(gs []PriorityGracePeriod) time.Duration {
	var sum int64
	for _, g := range gs {
		sum += g.ShutdownGracePeriodSeconds
	}
	return time.Duration(sum) * time.Second
}

// podPriority is the pod's spec.priority, 0 when unset.
func podPriority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// groupPods puts each pod into the group of the highest priority not above
// its own; a pod below every group's priority goes into the lowest. gs is
// sorted, lowest priority first, and not empty.
func groupPods(gs []PriorityGracePeriod, pods []*v1.Pod) []group {
	out := make([]group, len(gs))
	for i, g := range gs {
		out[i].PriorityGracePeriod = g
	}
	for _, pod := range pods {
		p := podPriority(pod)
		// The first group whose priority is above the pod's; the pod
		// belongs to the one before.
		i := sort.Search(len(out), func(i int) bool { return out[i].Priority > p })
		if i > 0 {
			i--
		}
		out[i].pods = append(out[i].pods, pod)
	}
	return out
}

// gracePeriod is the grace period a pod of g gets: the group's, or the
// pod's own terminationGracePeriodSeconds when shorter.
func gracePeriod(g PriorityGracePeriod, pod *v1.Pod) int64 {
	gp := g.ShutdownGracePeriodSeconds
	if t := pod.Spec.TerminationGracePeriodSeconds; t != nil && *t <= gp {
		gp = *t
	}
	return gp
}
