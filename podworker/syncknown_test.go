package podworker_test

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/podworker"
	pwt "github.com/podlife/podlife/podworker/podworkertest"
)

// TestSyncKnownPodsReportsEveryPodInEveryShard checks SyncKnownPods' answer
// against each pod's own state with pods in every shard: running ones,
// finished tombstones, desired pods whose restart was requested (finished,
// and still terminating), pods no longer desired, and a desired list with
// duplicates, a nil and a pod the workers never saw.
func TestSyncKnownPodsReportsEveryPodInEveryShard(t *testing.T) {
	h := newHarness(t).run()
	const n = 256
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = newPod(fmt.Sprintf("uid-%03d", i), fmt.Sprintf("pod-%d", i))
		h.w.UpdatePod(create(pods[i]))
	}
	for i := range pods {
		h.methods(pods[i].UID, "SyncPod")
	}
	zero := int64(0)
	finished := map[types.UID]bool{}
	for i := 0; i < n; i += 4 { // every 4th pod is killed and finishes
		h.w.UpdatePod(kill(pods[i], &podworker.KillPodOptions{PodTerminationGracePeriodSecondsOverride: &zero}))
		finished[pods[i].UID] = true
	}
	for uid := range finished {
		h.lifecycle(uid, podworker.LifecycleFinished)
	}
	// Pods 1 and 5 are recreated while terminating: 1 then finishes, 5 stays
	// in SyncTerminatingPod until the end of the test.
	restarting := map[types.UID]bool{}
	for _, i := range []int{1, 5} {
		uid := pods[i].UID
		gate := h.f.Block(pwt.SyncTerminatingPod, uid)
		h.w.UpdatePod(kill(pods[i], nil))
		<-gate.Entered()
		h.w.UpdatePod(create(pods[i]))
		if i == 1 {
			gate.Release()
			h.lifecycle(uid, podworker.LifecycleFinished)
		} else {
			restarting[uid] = true
			t.Cleanup(gate.Release)
		}
	}
	// Only pod 5's loop runs (blocked).
	busyOne := func() { pwt.WaitFor(t, 0, "only pod 5 busy", func() bool { return h.w.Busy() == 1 }) }
	busyOne()

	check := func(got map[types.UID]podworker.PodWorkerSync, desired map[types.UID]bool) {
		t.Helper()
		for _, p := range pods {
			info, known := h.w.PodInfo(p.UID)
			s, reported := got[p.UID]
			if reported != known {
				t.Errorf("%s: reported %v, known %v (%+v)", p.UID, reported, known, info)
				continue
			}
			if !known {
				continue
			}
			want := podworker.PodWorkerSync{State: info.State, Orphan: !desired[p.UID], HasConfig: info.HasConfig, Static: info.Static}
			if s != want {
				t.Errorf("%s: reported %+v, want %+v", p.UID, s, want)
			}
		}
		if len(got) != h.w.Len() {
			t.Errorf("reported %d pods, %d known", len(got), h.w.Len())
		}
	}

	// Everything desired, the list with a duplicate, a nil and a stranger.
	desired := map[types.UID]bool{}
	list := []*v1.Pod{pods[3], nil, newPod("stranger", "stranger")}
	for _, p := range pods {
		desired[p.UID] = true
		list = append(list, p)
	}
	got := h.w.SyncKnownPods(list)
	if _, ok := got[pods[1].UID]; ok {
		t.Errorf("finished pod whose restart was requested still reported")
	}
	if s := got[pods[5].UID]; s.State != podworker.TerminatingPod || s.Orphan {
		t.Errorf("terminating pod whose restart was requested reported as %+v", s)
	}
	if s := got[pods[0].UID]; s.State != podworker.TerminatedPod {
		t.Errorf("finished desired pod reported as %+v", s)
	}
	check(got, desired)
	if len(got) != n-1 {
		t.Errorf("reported %d pods, want %d", len(got), n-1)
	}

	// The odd pods are no longer desired: finished ones are forgotten,
	// running ones reported as terminating orphans.
	list = list[:0]
	clear(desired)
	for i, p := range pods {
		if i%2 == 0 {
			desired[p.UID] = true
			list = append(list, p)
		}
	}
	got = h.w.SyncKnownPods(list)
	for i, p := range pods {
		s, ok := got[p.UID]
		switch {
		case i%2 == 0:
			if !ok || s.Orphan {
				t.Errorf("%s: desired pod reported %+v, %v", p.UID, s, ok)
			}
		case i == 1:
			if ok {
				t.Errorf("%s: forgotten pod reported %+v", p.UID, s)
			}
		default:
			if want := (podworker.PodWorkerSync{State: podworker.TerminatingPod, Orphan: true, HasConfig: true}); s != want {
				t.Errorf("%s: orphan reported %+v, %v, want %+v", p.UID, s, ok, want)
			}
		}
	}
	for i := 3; i < n; i += 2 {
		if i != 5 {
			h.lifecycle(pods[i].UID, podworker.LifecycleFinished)
		}
	}
	busyOne()
	got = h.w.SyncKnownPods(list)
	check(got, desired)
	if len(got) != n/2+1 { // the even pods and pod 5
		t.Errorf("reported %d pods, want %d", len(got), n/2+1)
	}
}
