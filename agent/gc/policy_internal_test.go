package gc

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// randomNode makes pods with sandboxes and several instances of a few
// containers in every state, and a fate for each pod.
func randomNode(r *rand.Rand) ([]*runtime.Pod, map[types.UID]podFate) {
	states := []runtime.ContainerState{runtime.ContainerStateRunning, runtime.ContainerStateExited,
		runtime.ContainerStateCreated, runtime.ContainerStateUnknown}
	var pods []*runtime.Pod
	fates := map[types.UID]podFate{}
	n := 0
	for p := range 1 + r.IntN(6) {
		pod := &runtime.Pod{ID: types.UID(fmt.Sprint("pod", p)), Name: fmt.Sprint("p", p), Namespace: "ns"}
		fates[pod.ID] = podFate(r.IntN(3))
		for s := range 1 + r.IntN(3) {
			st := runtime.ContainerStateExited
			if r.IntN(2) == 0 {
				st = runtime.ContainerStateRunning
			}
			n++
			pod.Sandboxes = append(pod.Sandboxes, &runtime.Container{ID: runtime.ContainerID{ID: fmt.Sprint("sb", n)},
				State: st, Attempt: uint32(s), CreatedAt: t0.Add(time.Duration(r.IntN(100)) * time.Second)})
		}
		for c := range 1 + r.IntN(3) {
			for a := range 1 + r.IntN(4) {
				n++
				sb := pod.Sandboxes[r.IntN(len(pod.Sandboxes))]
				pod.Containers = append(pod.Containers, &runtime.Container{ID: runtime.ContainerID{ID: fmt.Sprint("c", n)},
					Name: fmt.Sprint("c", c), State: states[r.IntN(len(states))], Attempt: uint32(a),
					CreatedAt: t0.Add(time.Duration(r.IntN(100)) * time.Second), SandboxID: sb.ID.ID})
			}
		}
		pods = append(pods, pod)
	}
	return pods, fates
}

// Invariants of the plan, on random nodes and policies: nothing running,
// nothing of a terminating pod; of a live pod no created container and,
// per container, at least min(MaxPerPodContainer, its dead instances)
// kept, always including the newest (and with MaxContainers, at least
// one kept per container); every dead container of a removable pod goes;
// no sandbox that is ready or holds a container, and never the newest
// sandbox of a live pod.
func TestPlanInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for i := range 3000 {
		pods, fates := randomNode(r)
		p := Policy{MaxPerPodContainer: r.IntN(4) - 1, MaxContainers: r.IntN(8) - 1}
		if r.IntN(3) == 0 {
			p.MinAge = time.Duration(r.IntN(100)) * time.Second
		}
		now := t0.Add(time.Duration(r.IntN(200)) * time.Second)
		fate := func(pod *runtime.Pod) podFate { return fates[pod.ID] }
		removed := map[string]bool{}
		for _, d := range planContainers(pods, fate, p, now) {
			if removed[d.id.ID] {
				t.Fatalf("case %d: container %s planned twice", i, d.id.ID)
			}
			removed[d.id.ID] = true
		}
		present := map[string]bool{}
		for _, pod := range pods {
			dead := map[string][]*runtime.Container{}
			for _, c := range pod.Containers {
				if !removed[c.ID.ID] {
					present[c.SandboxID] = true
				}
				switch f := fates[pod.ID]; {
				case removed[c.ID.ID] && c.State == runtime.ContainerStateRunning:
					t.Fatalf("case %d: running container %s removed", i, c.ID.ID)
				case removed[c.ID.ID] && f == fateTerminating:
					t.Fatalf("case %d: container %s of a terminating pod removed", i, c.ID.ID)
				case f == fateRemovable && c.State != runtime.ContainerStateRunning && !removed[c.ID.ID]:
					t.Fatalf("case %d: dead container %s of a removable pod kept", i, c.ID.ID)
				case f == fateLive && removed[c.ID.ID] && c.State == runtime.ContainerStateCreated:
					t.Fatalf("case %d: created container %s of a live pod removed", i, c.ID.ID)
				case f == fateLive && (c.State == runtime.ContainerStateExited || c.State == runtime.ContainerStateUnknown) &&
					(p.MinAge == 0 || now.Sub(c.CreatedAt) >= p.MinAge):
					dead[c.Name] = append(dead[c.Name], c)
				}
			}
			for name, cs := range dead {
				var newest *runtime.Container
				kept := 0
				for _, c := range cs {
					if newest == nil || newestFirst(toDead(c), toDead(newest)) < 0 {
						newest = c
					}
					if !removed[c.ID.ID] {
						kept++
					}
				}
				want := len(cs)
				if p.MaxPerPodContainer >= 0 {
					want = min(want, p.MaxPerPodContainer)
				}
				if p.MaxContainers >= 0 {
					want = min(want, 1)
				}
				if kept < want && !(p.MaxContainers >= 0 && kept == 0 && p.MaxContainers < countUnits(pods, fates)) {
					t.Fatalf("case %d: pod %s container %s: %d of %d dead instances kept, want at least %d (policy %+v)", i, pod.ID, name, kept, len(cs), want, p)
				}
				if want > 0 && kept > 0 && removed[newest.ID.ID] {
					t.Fatalf("case %d: pod %s container %s: the newest dead instance removed while older ones stay", i, pod.ID, name)
				}
			}
		}
		for _, s := range planSandboxes(pods, fate, present) {
			var sb *runtime.Container
			for _, x := range s.pod.Sandboxes {
				if x.ID.ID == s.id {
					sb = x
				}
			}
			if sb.State == runtime.ContainerStateRunning || present[s.id] || fates[s.pod.ID] == fateTerminating {
				t.Fatalf("case %d: sandbox %s removed (state %s, holds a container %v, fate %d)", i, s.id, sb.State, present[s.id], fates[s.pod.ID])
			}
			if fates[s.pod.ID] == fateLive {
				newer := false
				for _, x := range s.pod.Sandboxes {
					if x != sb && newestFirst(toDead(x), toDead(sb)) < 0 {
						newer = true
					}
				}
				if !newer {
					t.Fatalf("case %d: sandbox %s, the newest of a live pod, removed", i, s.id)
				}
			}
		}
	}
}

func toDead(c *runtime.Container) deadContainer {
	return deadContainer{id: c.ID, createdAt: c.CreatedAt, attempt: c.Attempt}
}

// countUnits counts the (pod, container) pairs of live pods: with
// MaxContainers below it, the node cap may leave a container none.
func countUnits(pods []*runtime.Pod, fates map[types.UID]podFate) int {
	n := 0
	for _, pod := range pods {
		if fates[pod.ID] != fateLive {
			continue
		}
		seen := map[string]bool{}
		for _, c := range pod.Containers {
			if !seen[c.Name] {
				seen[c.Name] = true
				n++
			}
		}
	}
	return n
}
