package cri_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

type fakeRecorder struct {
	mu     sync.Mutex
	events []string // "Type Reason: message"
}

func (f *fakeRecorder) Eventf(obj apiruntime.Object, typ, reason, format string, args ...interface{}) {
	if _, ok := obj.(*v1.Pod); !ok {
		panic(fmt.Sprintf("event about %T", obj))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, typ+" "+reason+": "+fmt.Sprintf(format, args...))
}

func (f *fakeRecorder) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.events
	f.events = nil
	return out
}

func TestEvents(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	_, ep := startFake(t, fakecri.Options{Clock: clk, Images: []string{testImage}})
	rec := &fakeRecorder{}
	rt := newRuntime(t, ep, func(o *cri.Options) { o.Clock = clk; o.Recorder = rec })
	ctx := ctxT(t)
	pod := testPod("ev", v1.RestartPolicyAlways,
		v1.Container{Name: "crash", Image: "example.com/crash:1", Args: []string{"exit", "1"}},
		v1.Container{Name: "hook", Lifecycle: &v1.Lifecycle{PostStart: execHandler("false")}})
	pod.Spec.InitContainers = []v1.Container{initC("init", "exit", "0")}

	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`Normal Pulled: Container image "localhost/podlife/pause:1.0" already present on machine`,
		"Normal Created: Created container: init",
		"Normal Started: Started container init",
	}
	if got := rec.take(); !slices.Equal(got, want) {
		t.Fatalf("init events:\n got %q\nwant %q", got, want)
	}
	_ = rt.SyncPod(ctx, pod, nil) // the regular containers; the hook fails
	got := rec.take()
	for _, w := range []string{
		`Normal Pulling: Pulling image "example.com/crash:1"`,
		`Normal Pulled: Successfully pulled image "example.com/crash:1" in 0s`,
		"Normal Created: Created container: crash",
		"Normal Started: Started container crash",
		"Normal Started: Started container hook",
		"Normal Killing: FailedPostStartHook",
	} {
		if !slices.Contains(got, w) {
			t.Errorf("missing event %q in %q", w, got)
		}
	}
	if !slices.ContainsFunc(got, func(e string) bool {
		return strings.HasPrefix(e, "Warning FailedPostStartHook: PostStartHook failed: command [\"false\"] exited with 1")
	}) {
		t.Errorf("no FailedPostStartHook event in %q", got)
	}
	_ = rt.SyncPod(ctx, pod, nil) // first restarts at once
	rec.take()
	_ = rt.SyncPod(ctx, pod, nil) // now both wait
	got = rec.take()
	if w := "Warning BackOff: Back-off restarting failed container crash in pod ev_ns(uid-ev)"; !slices.Contains(got, w) {
		t.Errorf("missing %q in %q", w, got)
	}
	msgs := rt.BackOff(pod, podStatus(t, rt, pod))
	if w := "back-off 10s restarting failed container=crash pod=ev_ns(uid-ev)"; msgs["crash"] != w || len(msgs) != 2 || msgs["init"] != "" {
		t.Errorf("BackOff = %q, want crash: %q and hook", msgs, w)
	}
	if err := rt.KillPod(ctx, pod, nil, nil); err != nil {
		t.Fatal(err)
	}
	rec.take()
}

func TestKillingEvents(t *testing.T) {
	_, ep := startFake(t, fakecri.Options{})
	rec := &fakeRecorder{}
	rt := newRuntime(t, ep, func(o *cri.Options) { o.Recorder = rec })
	ctx := ctxT(t)
	pod := testPod("kill", v1.RestartPolicyAlways, v1.Container{Name: "a", Lifecycle: &v1.Lifecycle{PreStop: execHandler("false")}})
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatal(err)
	}
	rec.take()
	if err := rt.KillPod(ctx, pod, nil, nil); err != nil {
		t.Fatal(err)
	}
	got := rec.take()
	if len(got) != 2 || got[0] != "Normal Killing: Stopping container a" || !strings.HasPrefix(got[1], "Warning FailedPreStopHook: PreStopHook failed: ") {
		t.Fatalf("events %q", got)
	}
}
