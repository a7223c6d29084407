package agent

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
)

// TestRunning: the running view housekeeping derives from a full listing is
// what GetPods(ctx, false) lists.
func TestRunning(t *testing.T) {
	c := func(id string, s runtime.ContainerState) *runtime.Container {
		return &runtime.Container{ID: runtime.ContainerID{Type: "t", ID: id}, State: s}
	}
	const (
		run  = runtime.ContainerStateRunning
		exit = runtime.ContainerStateExited
		made = runtime.ContainerStateCreated
	)
	allRunning := &runtime.Pod{ID: "a", Sandboxes: []*runtime.Container{c("a-sb", run)}, Containers: []*runtime.Container{c("a-1", run)}}
	mixed := &runtime.Pod{ID: "b", Sandboxes: []*runtime.Container{c("b-sb0", exit), c("b-sb1", run)},
		Containers: []*runtime.Container{c("b-1", exit), c("b-2", run), c("b-3", made)}}
	dead := &runtime.Pod{ID: "c", Sandboxes: []*runtime.Container{c("c-sb", exit)}, Containers: []*runtime.Container{c("c-1", exit)}}
	onlyContainer := &runtime.Pod{ID: "d", Sandboxes: []*runtime.Container{c("d-sb", exit)}, Containers: []*runtime.Container{c("d-1", run)}}
	empty := &runtime.Pod{ID: "e"}

	got := running([]*runtime.Pod{allRunning, mixed, dead, onlyContainer, empty})
	want := []*runtime.Pod{
		allRunning,
		{ID: "b", Sandboxes: []*runtime.Container{c("b-sb1", run)}, Containers: []*runtime.Container{c("b-2", run)}},
		{ID: "d", Sandboxes: []*runtime.Container{}, Containers: []*runtime.Container{c("d-1", run)}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("running (-want +got):\n%s", diff)
	}
	if got[0] != allRunning {
		t.Error("a pod that runs entirely was copied")
	}
	if len(mixed.Containers) != 3 || len(mixed.Sandboxes) != 2 {
		t.Error("the listing was modified")
	}
}

// TestForgottenNotedOncePerForgetting: housekeeping notes a pod the workers
// forgot once, with the relist count of the pass that forgot it, so that
// only listings that may predate the forgetting skip it. A desired pod the
// workers no longer know must not be noted again at every pass (eb3195f
// did): every listing would then skip it, and a running remains of it would
// never be terminated.
func TestForgottenNotedOncePerForgetting(t *testing.T) {
	rt, err := cri.New(cri.Options{Endpoint: "unix:///nonexistent/podlife-agent-test.sock"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	a, err := New(Options{Runtime: rt, NodeName: "n"})
	if err != nil {
		t.Fatal(err)
	}
	a.pods.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "desired", Name: "desired", Namespace: "ns"}})
	for _, uid := range []types.UID{"desired", "gone", "known"} {
		a.tracked[uid] = trackedPod{name: string(uid), namespace: "ns"}
	}
	known := map[types.UID]podworker.PodWorkerSync{"known": {}}

	a.forgetFinished(known, 5)
	if diff := cmp.Diff(map[types.UID]uint64{"desired": 5, "gone": 5}, a.forgotten); diff != "" {
		t.Fatalf("after the forgetting pass (-want +got):\n%s", diff)
	}
	if _, ok := a.tracked["gone"]; ok {
		t.Error("an undesired forgotten pod is still tracked")
	}
	delete(a.forgotten, "gone") // as a later listing prunes it

	a.forgetFinished(known, 9)
	if diff := cmp.Diff(map[types.UID]uint64{"desired": 5}, a.forgotten); diff != "" {
		t.Fatalf("a later pass noted again (-want +got):\n%s", diff)
	}

	// Known again (restarted), then forgotten again: noted anew.
	delete(a.forgotten, "desired")
	a.forgetFinished(map[types.UID]podworker.PodWorkerSync{"known": {}, "desired": {}}, 12)
	if len(a.forgotten) != 0 {
		t.Fatalf("a known pod noted: %v", a.forgotten)
	}
	a.forgetFinished(known, 15)
	if diff := cmp.Diff(map[types.UID]uint64{"desired": 15}, a.forgotten); diff != "" {
		t.Fatalf("forgotten a second time (-want +got):\n%s", diff)
	}
}

// TestIsInactive: housekeeping's judgement on SyncKnownPods' answer is the
// kubelet's (podWorkers.IsPodKnownTerminated, else a terminal phase or an
// admission rejection without a termination requested), state by state.
func TestIsInactive(t *testing.T) {
	const (
		unknown     = podworker.PodWorkerState(255) // no worker
		syncing     = podworker.SyncPod
		terminating = podworker.TerminatingPod
		terminated  = podworker.TerminatedPod
	)
	for _, tc := range []struct {
		state    podworker.PodWorkerState
		phase    v1.PodPhase
		rejected bool
		inactive bool
	}{
		{unknown, v1.PodRunning, false, false},
		{unknown, v1.PodPending, false, false},
		{unknown, v1.PodSucceeded, false, true},
		{unknown, v1.PodFailed, false, true},
		{unknown, v1.PodPending, true, true},
		{syncing, v1.PodRunning, false, false},
		{syncing, v1.PodSucceeded, false, true}, // terminal, nothing asked yet
		{syncing, v1.PodPending, true, true},
		{terminating, v1.PodRunning, false, false},
		{terminating, v1.PodFailed, false, false}, // its containers may still run
		{terminating, v1.PodPending, true, false},
		{terminated, v1.PodRunning, false, true},
		{terminated, v1.PodSucceeded, false, true},
	} {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}, Status: v1.PodStatus{Phase: tc.phase}}
		var rejected map[types.UID]struct{}
		if tc.rejected {
			rejected = map[types.UID]struct{}{"other": {}, "u": {}}
		}
		known := tc.state != unknown
		ws := podworker.PodWorkerSync{State: tc.state, HasConfig: true}
		if !known {
			ws = podworker.PodWorkerSync{}
		}
		if got := isInactive(pod, ws, known, rejected); got != tc.inactive {
			t.Errorf("worker %v, phase %s, rejected %v: inactive %v, want %v", tc.state, tc.phase, tc.rejected, got, tc.inactive)
		}
	}
}
