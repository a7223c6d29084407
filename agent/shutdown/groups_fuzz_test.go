package shutdown

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// FuzzGroupPods checks the grouping's invariants: every pod lands in
// exactly one group; the group is the one of the highest priority not
// above the pod's, or the lowest one when the pod is below them all; and a
// pod's grace period never exceeds its group's nor its own.
func FuzzGroupPods(f *testing.F) {
	f.Add(int32(0), int32(100), int32(2000000000), int32(50), int64(10), int64(30))
	f.Add(int32(-3), int32(-3), int32(7), int32(-10), int64(0), int64(-1))
	f.Fuzz(func(t *testing.T, g1, g2, g3, p int32, gs, podGrace int64) {
		if gs < 0 {
			gs = -gs
		}
		o := Options{ShutdownGracePeriodByPodPriority: []PriorityGracePeriod{
			{Priority: g1, ShutdownGracePeriodSeconds: gs}, {Priority: g2, ShutdownGracePeriodSeconds: gs + 1}, {Priority: g3, ShutdownGracePeriodSeconds: gs + 2}}}
		if g1 == g2 || g2 == g3 || g1 == g3 {
			return // validation refuses repeated priorities
		}
		sorted := o.Groups()
		pods := []*v1.Pod{newPod("a", &p, &podGrace), newPod("b", nil, nil)}
		out := groupPods(sorted, pods)
		n := 0
		for i, g := range out {
			for _, pod := range g.pods {
				n++
				pp := podPriority(pod)
				if pp < g.Priority && i != 0 {
					t.Errorf("pod priority %d in group %d", pp, g.Priority)
				}
				if i+1 < len(out) && pp >= out[i+1].Priority {
					t.Errorf("pod priority %d in group %d, below group %d", pp, g.Priority, out[i+1].Priority)
				}
				gp := gracePeriod(g.PriorityGracePeriod, pod)
				if gp > g.ShutdownGracePeriodSeconds {
					t.Errorf("grace period %d above the group's %d", gp, g.ShutdownGracePeriodSeconds)
				}
				if own := pod.Spec.TerminationGracePeriodSeconds; own != nil && gp > *own {
					t.Errorf("grace period %d above the pod's %d", gp, *own)
				}
			}
		}
		if n != len(pods) {
			t.Errorf("%d pods grouped, want %d", n, len(pods))
		}
	})
}
