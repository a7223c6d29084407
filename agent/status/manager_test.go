package status

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

func TestOneWriteIsOnePatch(t *testing.T) {
	pod := testPod("a", "uid-a")
	h := newHarness(t, nil, pod)
	h.run()
	if err := h.m.SetPodStatus(context.Background(), pod, nil, running("one")); err != nil {
		t.Fatal(err)
	}
	h.settle()
	if got := h.requests(); len(got) != 1 || got[0] != "patch/status" {
		t.Fatalf("requests = %v, want one patch/status", got)
	}
	got := h.apiPod(pod)
	if got.Status.Phase != v1.PodRunning || got.Status.Message != "one" || got.Status.QOSClass != v1.PodQOSBestEffort {
		t.Fatalf("API status = %+v", got.Status)
	}
	meta, _ := h.patches()[0]["metadata"].(map[string]any)
	if meta["uid"] != "uid-a" {
		t.Fatalf("patch carries no UID precondition: %v", h.patches()[0])
	}
	// The same status again: the API has it, no request.
	_ = h.m.SetPodStatus(context.Background(), pod, nil, running("one"))
	h.settle()
	if n := len(h.requests()); n != 1 {
		t.Fatalf("requests = %v, want still one", h.requests())
	}
}

// Of the PATCH's answer, the base of the next write, the manager keeps
// the metadata and the status, not a second copy of the spec, labels,
// annotations and managedFields.
func TestWrittenPodKeptTrimmed(t *testing.T) {
	pod := testPod("a", "uid-a")
	h := newHarness(t, nil, pod)
	h.react("patch", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		resp := pod.DeepCopy()
		resp.ResourceVersion = "7"
		resp.Status = running("one")
		resp.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "podlife", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"}}
		resp.Labels, resp.Annotations = map[string]string{"app": "a"}, map[string]string{"note": "n"}
		return true, resp, nil
	})
	h.run()
	if err := h.m.SetPodStatus(context.Background(), pod, nil, running("one")); err != nil {
		t.Fatal(err)
	}
	h.eventually("the PATCH's answer kept", func() bool {
		h.m.mu.Lock()
		defer h.m.mu.Unlock()
		e := h.m.pods[pod.UID]
		return e != nil && e.lastResponse != nil
	})
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	resp := h.m.pods[pod.UID].lastResponse
	if resp.ResourceVersion != "7" || resp.UID != pod.UID || resp.Name != pod.Name || resp.Namespace != pod.Namespace || resp.Status.Message != "one" {
		t.Errorf("kept %s/%s uid %s resourceVersion %q status %+v", resp.Namespace, resp.Name, resp.UID, resp.ResourceVersion, resp.Status)
	}
	if resp.ManagedFields != nil || resp.Labels != nil || resp.Annotations != nil || len(resp.Spec.Containers) != 0 {
		t.Errorf("kept managedFields %v, labels %v, annotations %v, containers %v", resp.ManagedFields, resp.Labels, resp.Annotations, resp.Spec.Containers)
	}
}

func TestSetPodStatusNeverWaitsForTheAPI(t *testing.T) {
	pod := testPod("a", "uid-a")
	h := newHarness(t, nil, pod)
	block, _ := h.blocker()
	h.react("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		<-block
		return false, nil, nil
	})
	h.run()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 1000 {
			_ = h.m.SetPodStatus(context.Background(), pod, nil, running(fmt.Sprint(i)))
		}
		_ = h.m.PodFinished(context.Background(), pod, nil, terminal(v1.PodSucceeded))
	}()
	h.eventually("1001 calls returned while the API blocks", func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
}

func TestChangesCoalesceNewestWins(t *testing.T) {
	pod := testPod("a", "uid-a")
	h := newHarness(t, nil, pod)
	block, release := h.blocker()
	var first atomic.Bool
	h.react("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if first.CompareAndSwap(false, true) {
			<-block
		}
		return false, nil, nil
	})
	h.run()
	_ = h.m.SetPodStatus(context.Background(), pod, nil, running("0"))
	h.eventually("first write in flight", func() bool { return h.count("patch/status") == 1 })
	for i := 1; i < 10; i++ {
		_ = h.m.SetPodStatus(context.Background(), pod, nil, running(fmt.Sprint(i)))
	}
	release()
	h.settle()
	if n := h.count("patch/status"); n != 2 {
		t.Fatalf("patches = %d, want 2 (the one in flight, then the newest)", n)
	}
	if got := h.apiPod(pod).Status.Message; got != "9" {
		t.Fatalf("API message = %q, want the newest, 9", got)
	}
}

func TestTerminalPhaseHeldWhileContainersMayRun(t *testing.T) {
	pod := testPod("a", "uid-a")
	h := newHarness(t, noHold, pod)
	h.states.set(pod.UID, true)
	h.run()
	_ = h.m.SetPodStatus(context.Background(), pod, nil, running("up"))
	h.settle()
	_ = h.m.SetPodStatus(context.Background(), pod, nil, terminal(v1.PodFailed))
	h.settle()
	if got := h.apiPod(pod).Status; got.Phase != v1.PodRunning || got.Conditions[0].Status != v1.ConditionFalse {
		t.Fatalf("API status = %+v, want Running kept with the rest of the new status", got)
	}
	for _, p := range h.patches() {
		if ph := statusPhase(p); ph == string(v1.PodFailed) || ph == string(v1.PodSucceeded) {
			t.Fatalf("terminal phase written while containers could run: %v", p)
		}
	}
	// The pod worker is done: the next reconcile writes the terminal
	// phase without any new call.
	h.states.set(pod.UID, false)
	h.clock.Step(DefaultReconcileInterval)
	h.eventually("terminal phase written by the reconcile", func() bool {
		return h.m.Pending() == 0 && h.apiPod(pod).Status.Phase == v1.PodFailed
	})
}

func TestNoMirrorNothingWritten(t *testing.T) {
	static := testPod("s", "uid-static")
	static.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	h := newHarness(t, nil)
	h.run()
	_ = h.m.SetPodStatus(context.Background(), static, nil, running("x"))
	h.settle()
	if got := h.requests(); len(got) != 0 {
		t.Fatalf("requests = %v, want none without a mirror pod", got)
	}
}
