package cri_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/fakecri"
)

func TestGracePeriod(t *testing.T) {
	ptr := func(i int64) *int64 { return &i }
	for _, tc := range []struct {
		name      string
		spec      *int64
		deletion  *int64
		override  *int64
		wantStops int64
	}{
		{name: "default 30s", wantStops: 30},
		{name: "spec", spec: ptr(12), wantStops: 12},
		{name: "deletion grace wins over spec", spec: ptr(12), deletion: ptr(5), wantStops: 5},
		{name: "override wins", spec: ptr(12), deletion: ptr(5), override: ptr(3), wantStops: 3},
		{name: "floor of 2s", override: ptr(0), wantStops: 2},
		{name: "floor applies to the spec too", spec: ptr(1), wantStops: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, ep := startFake(t, fakecri.Options{})
			rt := newRuntime(t, ep)
			ctx := ctxT(t)
			pod := testPod("g", v1.RestartPolicyAlways, v1.Container{Name: "c"})
			pod.Spec.TerminationGracePeriodSeconds = tc.spec
			pod.DeletionGracePeriodSeconds = tc.deletion
			if err := rt.SyncPod(ctx, pod, nil); err != nil {
				t.Fatal(err)
			}
			id := podStatus(t, rt, pod).ContainerStatuses[0].ID.ID
			if err := rt.KillPod(ctx, pod, nil, tc.override); err != nil {
				t.Fatal(err)
			}
			if got, _ := srv.StopTimeout(id); got != tc.wantStops {
				t.Fatalf("StopContainer timeout %d, want %d", got, tc.wantStops)
			}
		})
	}
}

func TestKillHonoursContext(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	_, ep := startFake(t, fakecri.Options{Clock: clk}) // a "hang" container waits its grace period on clk
	rt := newRuntime(t, ep)
	pod := testPod("h", v1.RestartPolicyAlways, v1.Container{Name: "c", Args: []string{"hang"}})
	if err := rt.SyncPod(ctxT(t), pod, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.KillPod(ctx, pod, nil, nil) }()
	eventually(t, 5*time.Second, "StopContainer to wait for the grace period", clk.HasWaiters)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, runtime.ErrCanceled) {
			t.Fatalf("KillPod after cancel: %v, want ErrCanceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("KillPod did not return after its context was cancelled")
	}
	// With time passing, the hang container is killed after its grace period.
	eventually(t, 5*time.Second, "the cancelled StopContainer to stop its timer", func() bool { return !clk.HasWaiters() })
	go func() { done <- rt.KillPod(context.Background(), pod, nil, nil) }()
	eventually(t, 5*time.Second, "StopContainer to wait again", clk.HasWaiters)
	clk.Step(30 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if c := podStatus(t, rt, pod).ContainerStatuses[0]; c.ExitCode != 137 {
		t.Fatalf("hang container: %+v, want exit 137", c)
	}
}

func TestKillStopsSandboxEvenWhenAContainerStopFails(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	ctx := ctxT(t)
	pod := testPod("ks", v1.RestartPolicyAlways, v1.Container{Name: "c"})
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatal(err)
	}
	srv.FailNext("StopContainer", codes.Internal)
	err := rt.KillPod(ctx, pod, nil, nil)
	if !errors.Is(err, runtime.ErrUnknown) || !strings.Contains(err.Error(), `container "c"`) {
		t.Fatalf("KillPod: %v, want the container's error", err)
	}
	if st := podStatus(t, rt, pod); !st.IsTerminal() {
		t.Fatalf("pod not terminal after the sandbox stop: %+v", st.ContainerStatuses)
	}
}
