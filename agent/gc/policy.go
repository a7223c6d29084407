package gc

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
)

// podFate is what a pass may do to a pod's objects.
type podFate int

const (
	// fateLive: a pod that runs or may run again: its dead containers
	// beyond the policy and its older dead sandboxes go.
	fateLive podFate = iota
	// fateTerminating: its containers are being stopped: nothing of it
	// is touched.
	fateTerminating
	// fateRemovable: deleted (or unknown), or terminated when the pass
	// removes every unused container: every dead object of it goes.
	fateRemovable
)

// fateOf decides a pod's fate from the pod workers' answers.
// evictNonDeleted is DeleteAllUnusedContainers' pass (under disk
// pressure): the dead objects of a terminated pod go even if it was not
// deleted. sourcesReady: until the sources are ready, no pod is
// removable.
func fateOf(ps PodState, uid types.UID, sourcesReady, evictNonDeleted bool) podFate {
	runtimeRemovable := ps.ShouldPodRuntimeBeRemoved(uid)
	if ps.ShouldPodContainersBeTerminating(uid) && !runtimeRemovable {
		return fateTerminating
	}
	if sourcesReady && (ps.ShouldPodContentBeRemoved(uid) || (evictNonDeleted && runtimeRemovable)) {
		return fateRemovable
	}
	return fateLive
}

// deadContainer is a container that a pass may remove.
type deadContainer struct {
	id        runtime.ContainerID
	pod       *runtime.Pod
	name      string
	createdAt time.Time
	attempt   uint32
	unknown   bool // in an unknown state: stopped before it is removed
}

// evictUnit groups the instances of one container of one pod.
type evictUnit struct {
	uid  types.UID
	name string
}

// newestFirst orders instances as the kubelet: the highest attempt
// first, then the most recently created.
func newestFirst(a, b deadContainer) int {
	return cmp.Or(cmp.Compare(b.attempt, a.attempt), b.createdAt.Compare(a.createdAt), cmp.Compare(a.id.ID, b.id.ID))
}

// planContainers returns the containers to remove, as the kubelet's
// evictContainers: of each removable pod every one that does not run; of
// live pods those that have not run for Policy.MinAge beyond the
// MaxPerPodContainer newest instances of each container, then beyond
// MaxContainers on the node (at least one per container kept, the oldest
// first). A container that was created but not started yet is about to
// start, and counts only for removable pods. fate gives each pod's fate;
// it is asked once per pod.
func planContainers(pods []*runtime.Pod, fate func(*runtime.Pod) podFate, p Policy, now time.Time) []deadContainer {
	var remove []deadContainer
	units := map[evictUnit][]deadContainer{}
	for _, pod := range pods {
		if len(pod.Containers) == 0 {
			continue
		}
		f := fate(pod)
		if f == fateTerminating {
			continue
		}
		for _, c := range pod.Containers {
			if c == nil || c.State == runtime.ContainerStateRunning {
				continue
			}
			d := deadContainer{id: c.ID, pod: pod, name: c.Name, createdAt: c.CreatedAt, attempt: c.Attempt,
				unknown: c.State == runtime.ContainerStateUnknown}
			if f == fateRemovable {
				remove = append(remove, d)
				continue
			}
			if c.State == runtime.ContainerStateCreated {
				continue
			}
			// MinAge 0 takes any dead container, whatever the clock
			// says (a clock set back makes no container "too young").
			if p.MinAge > 0 && now.Sub(c.CreatedAt) < p.MinAge {
				continue
			}
			k := evictUnit{pod.ID, c.Name}
			units[k] = append(units[k], d)
		}
	}
	keep := func(k evictUnit, n int) {
		u := units[k]
		if len(u) <= n {
			return
		}
		slices.SortFunc(u, newestFirst)
		remove = append(remove, u[n:]...)
		units[k] = u[:n]
	}
	if p.MaxPerPodContainer >= 0 {
		for k := range units {
			keep(k, p.MaxPerPodContainer)
		}
	}
	if p.MaxContainers >= 0 {
		total := 0
		for _, u := range units {
			total += len(u)
		}
		if total > p.MaxContainers {
			per := max(p.MaxContainers/max(len(units), 1), 1)
			for k := range units {
				keep(k, per)
			}
			var left []deadContainer
			for _, u := range units {
				left = append(left, u...)
			}
			if len(left) > p.MaxContainers {
				slices.SortFunc(left, newestFirst)
				remove = append(remove, left[p.MaxContainers:]...)
			}
		}
	}
	return remove
}

// deadSandbox is a sandbox that a pass may remove.
type deadSandbox struct {
	id  string
	pod *runtime.Pod
}

// planSandboxes returns the sandboxes to remove, as the kubelet's
// evictSandboxes: those that are not ready and hold no container (in
// present: the IDs of the sandboxes that still hold one), all of them of
// a removable pod, all but the newest of a live pod (so that it keeps
// the newest, ready or not), none of a terminating pod.
func planSandboxes(pods []*runtime.Pod, fate func(*runtime.Pod) podFate, present map[string]bool) []deadSandbox {
	var remove []deadSandbox
	for _, pod := range pods {
		if len(pod.Sandboxes) == 0 {
			continue
		}
		f := fate(pod)
		if f == fateTerminating {
			continue
		}
		sbs := pod.Sandboxes
		if f == fateLive {
			if len(sbs) < 2 {
				continue
			}
			sbs = slices.Clone(sbs)
			slices.SortFunc(sbs, func(a, b *runtime.Container) int {
				return cmp.Or(cmp.Compare(b.Attempt, a.Attempt), b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(a.ID.ID, b.ID.ID))
			})
			sbs = sbs[1:]
		}
		for _, sb := range sbs {
			if sb == nil || sb.State == runtime.ContainerStateRunning || present[sb.ID.ID] {
				continue
			}
			remove = append(remove, deadSandbox{id: sb.ID.ID, pod: pod})
		}
	}
	return remove
}
