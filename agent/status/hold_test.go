package status

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
)

// noHold turns Options.HoldTransient off: every status is written at once.
func noHold(o *Options) { o.HoldTransient = -1 }

// isHeld reports whether the pod's status is held (Options.HoldTransient).
// A held status makes no request until a newer status or the end of the
// hold moves it to the queue, so a test that finds it held knows nothing
// was written for it.
func (h *harness) isHeld(uid types.UID) bool {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	e, ok := h.m.held[uid]
	return ok && !e.holdUntil.IsZero() && !e.queued && !e.inFlight
}

// holdArmed waits until the dispatcher has armed the timer for the end of
// a hold: the reconcile ticker is always waiting, the hold's timer is the
// second waiter. Stepping the clock before that would move the hold's end
// later (the timer is armed from the stepped time): failed once in CI.
func (h *harness) holdArmed() {
	h.t.Helper()
	h.eventually("hold timer armed", func() bool { return h.clock.Waiters() == 2 })
}

// starting is the status the agent records before it starts a pod's
// containers: Pending, every container waiting.
func starting() v1.PodStatus {
	return v1.PodStatus{
		Phase: v1.PodPending,
		ContainerStatuses: []v1.ContainerStatus{{
			Name: "c", Image: "i",
			State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}},
		}},
	}
}

func TestFirstStartingStatusHeldForTheRunningOne(t *testing.T) {
	pod := testPod("a", "uid-a")
	h := newHarness(t, nil, pod)
	h.run()
	ctx := context.Background()
	_ = h.m.SetPodStatus(ctx, pod, nil, starting())
	if !h.isHeld(pod.UID) || h.m.Pending() != 1 {
		t.Fatalf("the first, not-started status is not held (held %v, pending %d)", h.isHeld(pod.UID), h.m.Pending())
	}
	_ = h.m.SetPodStatus(ctx, pod, nil, running("up"))
	h.settle()
	if got := h.requests(); len(got) != 1 || got[0] != "patch/status" {
		t.Fatalf("requests = %v, want one status patch (Running only)", got)
	}
	if ph := h.apiPod(pod).Status.Phase; ph != v1.PodRunning {
		t.Fatalf("phase = %s, want Running", ph)
	}
	// Once something is written, a Pending status is not transient any
	// more (a restart of the pod in place, say): written at once.
	_ = h.m.SetPodStatus(ctx, pod, nil, starting())
	if h.isHeld(pod.UID) {
		t.Fatal("a Pending status after a written one is held")
	}
	h.settle()
	if n := h.count("patch/status"); n != 2 {
		t.Fatalf("requests = %v, want a second patch", h.requests())
	}
}

func TestHeldStartingStatusWrittenWhenTheHoldEnds(t *testing.T) {
	pod := testPod("a", "uid-a")
	h := newHarness(t, nil, pod)
	h.run()
	ctx := context.Background()
	_ = h.m.SetPodStatus(ctx, pod, nil, starting())
	// Another status recorded while held does not move the hold's end.
	h.holdArmed()
	h.clock.Step(DefaultHoldTransient / 2)
	_ = h.m.SetPodStatus(ctx, pod, nil, starting())
	if !h.isHeld(pod.UID) {
		t.Fatal("not held")
	}
	h.clock.Step(DefaultHoldTransient / 2)
	h.settle()
	if n := h.count("patch/status"); n != 1 {
		t.Fatalf("requests = %v, want one patch once the hold ended", h.requests())
	}
	cs := h.apiPod(pod).Status.ContainerStatuses
	if len(cs) != 1 || cs[0].State.Waiting == nil || cs[0].State.Waiting.Reason != "ContainerCreating" {
		t.Fatalf("container statuses = %+v, want ContainerCreating (a slow start shows)", cs)
	}
}

func TestTerminalStatusHeldUntilTheWorkerFinishes(t *testing.T) {
	pod := deleting(testPod("a", "uid-a"))
	h := newHarness(t, nil, pod)
	h.states.set(pod.UID, true)
	h.run()
	ctx := context.Background()
	_ = h.m.SetPodStatus(ctx, pod, nil, running("up"))
	h.settle()
	// SyncTerminatingPod's status, recorded before the pod worker knows
	// the containers are stopped: held, not written without its phase.
	_ = h.m.SetPodStatus(ctx, pod, nil, terminal(v1.PodSucceeded))
	if !h.isHeld(pod.UID) {
		t.Fatal("terminal status recorded while containers may run is not held")
	}
	h.states.set(pod.UID, false)
	_ = h.m.PodFinished(ctx, pod, nil, terminal(v1.PodSucceeded))
	h.settle()
	got := h.requests()
	want := []string{"patch/status", "patch/status", "delete"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("requests = %v, want %v: one patch to Running, one to the terminal phase, the delete", got, want)
	}
	if ph := statusPhase(h.patches()[1]); ph != string(v1.PodSucceeded) {
		t.Fatalf("second patch phase = %q, want Succeeded", ph)
	}
}

func TestHeldTerminalStatusWrittenWithoutPhaseWhenTheHoldEnds(t *testing.T) {
	pod := testPod("a", "uid-a")
	h := newHarness(t, nil, pod)
	h.states.set(pod.UID, true)
	h.run()
	ctx := context.Background()
	_ = h.m.SetPodStatus(ctx, pod, nil, running("up"))
	h.settle()
	_ = h.m.SetPodStatus(ctx, pod, nil, terminal(v1.PodFailed))
	if !h.isHeld(pod.UID) {
		t.Fatal("not held")
	}
	h.holdArmed()
	h.clock.Step(DefaultHoldTransient)
	h.settle()
	if n := h.count("patch/status"); n != 2 {
		t.Fatalf("requests = %v, want the held status written once the hold ended", h.requests())
	}
	if got := h.apiPod(pod).Status; got.Phase != v1.PodRunning || got.Conditions[0].Status != v1.ConditionFalse {
		t.Fatalf("API status = %+v, want Running kept with the rest of the new status", got)
	}
}

func TestNoHoldWritesTheStartingStatus(t *testing.T) {
	pod := testPod("a", "uid-a")
	h := newHarness(t, noHold, pod)
	h.run()
	_ = h.m.SetPodStatus(context.Background(), pod, nil, starting())
	h.settle()
	if n := h.count("patch/status"); n != 1 {
		t.Fatalf("requests = %v, want the starting status written at once", h.requests())
	}
}

// A pod already queued when a transient status arrives is not written from
// the queue: it waits for the status that follows (or the hold's end) like
// any held pod.
func TestQueuedPodHeldByATransientStatus(t *testing.T) {
	h, _, b, release := behindABlockedWrite(t)
	ctx := context.Background()
	_ = h.m.SetPodStatus(ctx, b, nil, running("b")) // queued behind a
	_ = h.m.SetPodStatus(ctx, b, nil, terminal(v1.PodSucceeded))
	if !h.isHeldQueued(b.UID) {
		t.Fatal("b is not held")
	}
	release()
	h.eventually("a written, b left held", func() bool { return h.m.Pending() == 1 && h.isHeld(b.UID) })
	h.states.set(b.UID, false)
	_ = h.m.PodFinished(ctx, b, nil, terminal(v1.PodSucceeded))
	h.settle()
	phases := h.patchPhases("b")
	if len(phases) != 1 || phases[0] != string(v1.PodSucceeded) {
		t.Fatalf("b's patches wrote phases %q, want one, Succeeded", phases)
	}
}

// The same when the dispatcher had already taken the pod from the queue and
// waits for a free worker to hand it to: the worker does not write a status
// held meanwhile.
func TestDispatchedPodHeldByATransientStatus(t *testing.T) {
	h, a, b, release := behindABlockedWrite(t)
	ctx := context.Background()
	_ = h.m.SetPodStatus(ctx, b, nil, running("b"))
	h.eventually("b taken by the dispatcher", func() bool {
		h.m.mu.Lock()
		defer h.m.mu.Unlock()
		return h.m.pods[b.UID].inFlight
	})
	_ = h.m.SetPodStatus(ctx, b, nil, terminal(v1.PodSucceeded))
	release()
	h.eventually("a written, b left held", func() bool {
		h.m.mu.Lock()
		defer h.m.mu.Unlock()
		return !h.m.pods[b.UID].inFlight && h.m.pods[a.UID].written != nil
	})
	if n := len(h.patchPhases("b")); n != 0 {
		t.Fatalf("b written while held: %q", h.patchPhases("b"))
	}
	h.states.set(b.UID, false)
	_ = h.m.PodFinished(ctx, b, nil, terminal(v1.PodSucceeded))
	h.settle()
	if phases := h.patchPhases("b"); len(phases) != 1 || phases[0] != string(v1.PodSucceeded) {
		t.Fatalf("b's patches wrote phases %q, want one, Succeeded", phases)
	}
}

// behindABlockedWrite runs a manager with one worker, busy writing the
// status of pod a until release is called; pod b (being deleted) could
// still have running containers.
func behindABlockedWrite(t *testing.T) (h *harness, a, b *v1.Pod, release func()) {
	t.Helper()
	a, b = testPod("a", "uid-a"), deleting(testPod("b", "uid-b"))
	h = newHarness(t, func(o *Options) { o.Workers = 1 }, a, b)
	block, release := h.blocker()
	var first atomic.Bool
	h.react("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if first.CompareAndSwap(false, true) {
			<-block
		}
		return false, nil, nil
	})
	h.states.set(b.UID, true)
	h.run()
	_ = h.m.SetPodStatus(context.Background(), a, nil, running("a"))
	h.eventually("a's write in flight", func() bool { return h.count("patch/status") == 1 })
	return h, a, b, release
}

// patchPhases lists the phase each status patch of the named pod wrote (""
// for a patch without one).
func (h *harness) patchPhases(name string) []string {
	var phases []string
	for _, a := range h.actionsOf("patch") {
		if a.(k8stesting.PatchAction).GetName() == name {
			var body map[string]any
			_ = json.Unmarshal(a.(k8stesting.PatchAction).GetPatch(), &body)
			phases = append(phases, statusPhase(body))
		}
	}
	return phases
}

// isHeldQueued reports whether the pod's status is held, queued or not.
func (h *harness) isHeldQueued(uid types.UID) bool {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	e, ok := h.m.held[uid]
	return ok && !e.holdUntil.IsZero()
}
