package status

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podlife/podlife/podmanager"
)

func deleting(p *v1.Pod) *v1.Pod {
	p = p.DeepCopy()
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	p.DeletionTimestamp = &now
	return p
}

func TestDeleteOnlyAfterTerminalWrittenAndFinished(t *testing.T) {
	pod := deleting(testPod("a", "uid-a"))
	h := newHarness(t, noHold, pod)
	h.states.set(pod.UID, true)
	h.run()
	ctx := context.Background()

	// Containers may still run: neither the terminal phase nor a delete.
	_ = h.m.SetPodStatus(ctx, pod, nil, terminal(v1.PodSucceeded))
	h.settle()
	// Terminated, the terminal phase written, but not finished: no delete.
	h.states.set(pod.UID, false)
	_ = h.m.SetPodStatus(ctx, pod, nil, terminal(v1.PodSucceeded))
	h.settle()
	h.clock.Step(DefaultReconcileInterval) // a reconcile changes nothing
	h.settle()
	if n := h.count("delete"); n != 0 {
		t.Fatalf("deleted before PodFinished: %v", h.requests())
	}
	if ph := h.apiPod(pod).Status.Phase; ph != v1.PodSucceeded {
		t.Fatalf("phase = %s, want Succeeded", ph)
	}
	_ = h.m.PodFinished(ctx, pod, nil, terminal(v1.PodSucceeded))
	h.settle()
	if n := h.count("delete"); n != 1 {
		t.Fatalf("requests = %v, want one delete after PodFinished", h.requests())
	}
	for _, a := range h.actionsOf("delete") {
		opts := a.(k8stesting.DeleteAction).GetDeleteOptions()
		if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 || opts.Preconditions == nil || *opts.Preconditions.UID != pod.UID {
			t.Fatalf("delete options = %+v, want grace 0 and the UID precondition", opts)
		}
	}
	// Never again.
	_ = h.m.PodFinished(ctx, pod, nil, terminal(v1.PodSucceeded))
	h.clock.Step(DefaultReconcileInterval)
	h.settle()
	if n := h.count("delete"); n != 1 {
		t.Fatalf("requests = %v, want still one delete", h.requests())
	}
}

func TestFinishedPodDeletedWhenTheDeletionComesLater(t *testing.T) {
	pod := testPod("a", "uid-a")
	h := newHarness(t, nil, pod)
	h.run()
	ctx := context.Background()
	_ = h.m.PodFinished(ctx, pod, nil, terminal(v1.PodFailed))
	h.settle()
	if n := h.count("delete"); n != 0 {
		t.Fatalf("deleted a pod not being deleted: %v", h.requests())
	}
	// The agent's housekeeping calls PodFinished again with the updated
	// pod once its deletion arrives.
	_ = h.m.PodFinished(ctx, deleting(pod), nil, terminal(v1.PodFailed))
	h.settle()
	if got := h.requests(); len(got) != 2 || got[1] != "delete" {
		t.Fatalf("requests = %v, want the patch then one delete", got)
	}
}

func TestGonePodsAreDroppedNotRetried(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "a", errors.New("node cannot patch"))
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "a")
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "a", errors.New("Precondition failed: UID"))
	// What the API server v1.37 answers a PATCH whose metadata.uid differs.
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "a", field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), "uid-a", "field is immutable")})
	for _, tc := range []struct {
		name  string
		patch error
		get   func() (runtime.Object, error)
		want  []string
	}{
		{name: "forbidden", patch: forbidden, want: []string{"patch/status"}},
		{name: "not found", patch: notFound, want: []string{"patch/status"}},
		{name: "conflict, then not found", patch: conflict, get: func() (runtime.Object, error) { return nil, notFound }, want: []string{"patch/status", "get"}},
		{name: "conflict, then forbidden", patch: conflict, get: func() (runtime.Object, error) { return nil, forbidden }, want: []string{"patch/status", "get"}},
		{name: "invalid (the UID precondition), then a new UID", patch: invalid, get: func() (runtime.Object, error) {
			return testPod("a", "another-uid"), nil
		}, want: []string{"patch/status", "get"}},
		{name: "new UID under the name", patch: conflict, get: func() (runtime.Object, error) {
			return testPod("a", "another-uid"), nil
		}, want: []string{"patch/status", "get"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("a", "uid-a")
			h := newHarness(t, nil, pod)
			h.react("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tc.patch })
			if tc.get != nil {
				h.react("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
					obj, err := tc.get()
					return true, obj, err
				})
			}
			h.run()
			ctx := context.Background()
			_ = h.m.SetPodStatus(ctx, pod, nil, running("x"))
			h.settle()
			if !h.m.IsGone(pod.UID) {
				t.Fatal("pod not dropped")
			}
			// Newer statuses, a finish, reconciles: nothing more.
			_ = h.m.SetPodStatus(ctx, pod, nil, running("y"))
			_ = h.m.PodFinished(ctx, deleting(pod), nil, terminal(v1.PodSucceeded))
			for range 3 {
				h.clock.Step(DefaultReconcileInterval)
				h.settle()
			}
			if got := h.requests(); !equalStrings(got, tc.want) {
				t.Fatalf("requests = %v, want %v", got, tc.want)
			}
			// Forget clears it.
			h.m.Forget(pod.UID)
			if _, ok := h.m.GetPodStatus(pod.UID); ok || h.m.IsGone(pod.UID) {
				t.Fatal("Forget kept the pod")
			}
		})
	}
}

func TestConflictWithTheSamePodRetriesOnceFromAFreshRead(t *testing.T) {
	pod := testPod("a", "uid-a")
	h := newHarness(t, nil, pod)
	var calls atomic.Int32
	h.react("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if calls.Add(1) == 1 {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "a", errors.New("stale"))
		}
		return false, nil, nil
	})
	h.run()
	_ = h.m.SetPodStatus(context.Background(), pod, nil, running("x"))
	h.settle()
	if got, want := h.requests(), []string{"patch/status", "get", "patch/status"}; !equalStrings(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
	if h.apiPod(pod).Status.Message != "x" {
		t.Fatal("status not written")
	}
}

func TestServerErrorsRetriedWithBackoffOnlyTheNewest(t *testing.T) {
	pod := testPod("a", "uid-a")
	h := newHarness(t, nil, pod)
	var fail atomic.Bool
	fail.Store(true)
	h.react("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fail.Load() {
			return true, nil, apierrors.NewInternalError(errors.New("boom"))
		}
		return false, nil, nil
	})
	h.run()
	ctx := context.Background()
	_ = h.m.SetPodStatus(ctx, pod, nil, running("0"))
	// The reconcile ticker is always waiting; a second waiter is the
	// back-off timer, armed only once the failure is recorded (stepping the
	// clock before that would move the retry itself later: failed once
	// under load).
	backingOff := func() bool { return h.clock.Waiters() == 2 }
	h.eventually("first failure", func() bool { return h.count("patch/status") == 1 && backingOff() })
	// Backing off: new statuses are recorded, not written now.
	for _, msg := range []string{"1", "2", "3"} {
		_ = h.m.SetPodStatus(ctx, pod, nil, running(msg))
	}
	// Rand is 0: the delays are 200 ms, 400 ms, 800 ms...
	h.eventually("timer waiting", backingOff)
	h.clock.Step(199 * time.Millisecond)
	if n := h.count("patch/status"); n != 1 {
		t.Fatalf("retried before the back-off: %v", h.requests())
	}
	h.clock.Step(time.Millisecond)
	h.eventually("second failure", func() bool { return h.count("patch/status") == 2 })
	h.eventually("timer waiting", func() bool { return h.m.Pending() == 1 && backingOff() })
	fail.Store(false)
	h.clock.Step(400 * time.Millisecond)
	h.settle()
	if n := h.count("patch/status"); n != 3 {
		t.Fatalf("requests = %v, want 3 patches (2 failed, then the newest)", h.requests())
	}
	if got := h.apiPod(pod).Status.Message; got != "3" {
		t.Fatalf("message = %q, want the newest, 3", got)
	}
}

func TestBackoffDelays(t *testing.T) {
	for _, tc := range []struct {
		failures int
		rand     float64
		want     time.Duration
	}{
		{1, 0, 200 * time.Millisecond},
		{2, 0, 400 * time.Millisecond},
		{3, 0.5, 800*time.Millisecond + 200*time.Millisecond},
		{7, 0, 10 * time.Second},
		{60, 0.999, 10*time.Second + 4995*time.Millisecond},
	} {
		m, err := New(Options{Client: newHarness(t, nil).client, PodStates: &podStates{}})
		if err != nil {
			t.Fatal(err)
		}
		if got := m.backoffDelay(tc.failures, tc.rand); got != tc.want {
			t.Errorf("backoffDelay(%d) with rand %v = %v, want %v", tc.failures, tc.rand, got, tc.want)
		}
	}
}

func TestReconcileRepairsDrift(t *testing.T) {
	pod := testPod("a", "uid-a")
	pm := podmanager.New()
	h := newHarness(t, func(o *Options) { o.Pods = pm }, pod)
	pm.UpdatePod(h.apiPod(pod))
	h.run()
	_ = h.m.SetPodStatus(context.Background(), pod, nil, running("mine"))
	h.settle()
	// Another writer changes the status; the watch delivers it.
	changed := h.apiPod(pod).DeepCopy()
	changed.Status.Message = "theirs"
	changed.ResourceVersion = "1000"
	if err := h.client.Tracker().Update(v1.SchemeGroupVersion.WithResource("pods"), changed, pod.Namespace); err != nil {
		t.Fatal(err)
	}
	pm.UpdatePod(changed)
	h.clock.Step(DefaultReconcileInterval)
	h.eventually("drift repaired", func() bool {
		return h.m.Pending() == 0 && h.apiPod(pod).Status.Message == "mine"
	})
	if n := h.count("patch/status"); n != 2 {
		t.Fatalf("requests = %v, want 2 patches", h.requests())
	}
}

func TestStaticPodStatusGoesToTheMirrorNeverDeleted(t *testing.T) {
	static := deleting(testPod("s", "uid-static"))
	static.Annotations = map[string]string{podmanager.ConfigSourceAnnotationKey: podmanager.FileSource}
	mirror := testPod("s", "uid-mirror")
	mirror.Annotations = map[string]string{podmanager.ConfigMirrorAnnotationKey: "hash"}
	pm := podmanager.New()
	pm.UpdatePod(static)
	h := newHarness(t, func(o *Options) { o.Pods = pm }, mirror)
	h.run()
	ctx := context.Background()
	_ = h.m.SetPodStatus(ctx, static, nil, running("x"))
	h.settle()
	if n := len(h.requests()); n != 0 {
		t.Fatalf("requests = %v, want none before the mirror exists", h.requests())
	}
	// The mirror appears: the reconcile writes to it.
	pm.UpdatePod(h.apiPod(mirror))
	h.clock.Step(DefaultReconcileInterval)
	h.eventually("mirror written", func() bool { return h.m.Pending() == 0 && h.apiPod(mirror).Status.Message == "x" })
	_ = h.m.PodFinished(ctx, static, nil, terminal(v1.PodSucceeded))
	h.settle()
	h.clock.Step(DefaultReconcileInterval)
	h.settle()
	if got := h.apiPod(mirror).Status.Phase; got != v1.PodSucceeded {
		t.Fatalf("mirror phase = %s", got)
	}
	for _, a := range h.actionsOf("patch") {
		if a.(k8stesting.PatchAction).GetName() != "s" {
			t.Fatalf("patched %v", a)
		}
	}
	if n := h.count("delete"); n != 0 {
		t.Fatalf("a mirror pod was deleted: %v", h.requests())
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestInvalidStatusOfTheSamePodRetriedWithBackoff(t *testing.T) {
	pod := testPod("a", "uid-a")
	h := newHarness(t, nil, pod)
	var fail atomic.Bool
	fail.Store(true)
	h.react("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fail.Load() {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "a", field.ErrorList{field.Invalid(field.NewPath("status", "phase"), "x", "bad")})
		}
		return false, nil, nil
	})
	h.run()
	_ = h.m.SetPodStatus(context.Background(), pod, nil, running("x"))
	h.eventually("failed once", func() bool { return h.count("get") == 1 && h.clock.HasWaiters() })
	if h.m.IsGone(pod.UID) {
		t.Fatal("the same pod was dropped")
	}
	fail.Store(false)
	h.stepUntilSettled(time.Second)
	if got, want := h.requests(), []string{"patch/status", "get", "patch/status"}; !equalStrings(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
}
