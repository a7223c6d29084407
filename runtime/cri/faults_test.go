package cri_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

func TestRuntimeDownGivesUnavailable(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	ctx := ctxT(t)
	pod := testPod("d", v1.RestartPolicyAlways, v1.Container{Name: "c"})
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatal(err)
	}
	srv.Down()
	start := time.Now()
	calls := map[string]func() error{
		"GetPods":      func() error { _, err := rt.GetPods(ctx, true); return err },
		"GetPodStatus": func() error { _, err := rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace); return err },
		"SyncPod":      func() error { return rt.SyncPod(ctx, pod, nil) },
		"KillPod":      func() error { return rt.KillPod(ctx, pod, nil, nil) },
		"RemovePod":    func() error { return rt.RemovePod(ctx, &runtime.Pod{ID: pod.UID}) },
		"Status":       func() error { _, err := rt.Status(ctx); return err },
		"Version":      func() error { _, err := rt.Version(ctx); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, runtime.ErrUnavailable) {
			t.Errorf("%s while the runtime is down: got %v, want ErrUnavailable", name, err)
		}
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("calls against a down runtime took %s; they must fail fast", took)
	}
	if err := srv.Up(); err != nil {
		t.Fatal(err)
	}
	// The client reconnects by itself (ReconnectMaxDelay) and finds the pod.
	eventually(t, 10*time.Second, "the client to reconnect", func() bool {
		pods, err := rt.GetPods(ctx, false)
		return err == nil && len(pods) == 1
	})
}

func TestMissingSocketGivesUnavailable(t *testing.T) {
	rt := newRuntime(t, "unix:///nonexistent/podlife/cri.sock")
	start := time.Now()
	_, err := rt.GetPods(ctxT(t), true)
	if !errors.Is(err, runtime.ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %s", took)
	}
}

func TestMalformedEndpoint(t *testing.T) {
	for _, ep := range []string{"", "tcp://127.0.0.1:1", "/run/containerd.sock", "unix://relative.sock", "unix:///" + strings.Repeat("x", 120)} {
		t.Run(ep, func(t *testing.T) {
			_, err := cri.New(cri.Options{Endpoint: ep})
			if !errors.Is(err, runtime.ErrInvalidArgument) || !strings.Contains(err.Error(), "Endpoint") {
				t.Fatalf("New(%q): got %v, want ErrInvalidArgument about Endpoint", ep, err)
			}
		})
	}
	_, err := cri.New(cri.Options{Endpoint: "unix:///x.sock", BackOffInitial: time.Minute, BackOffMax: time.Second, Timeout: -1})
	if !errors.Is(err, runtime.ErrInvalidArgument) || !strings.Contains(err.Error(), "BackOffMax") || !strings.Contains(err.Error(), "Timeout") {
		t.Fatalf("bad options: %v", err)
	}
}

func TestTimeout(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep, func(o *cri.Options) { o.Timeout = 200 * time.Millisecond })
	srv.Delay("ListPodSandbox", time.Hour)
	start := time.Now()
	_, err := rt.GetPods(context.Background(), true)
	if !errors.Is(err, runtime.ErrDeadlineExceeded) {
		t.Fatalf("got %v, want ErrDeadlineExceeded", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %s", took)
	}
}

func TestNotFoundWhileStoppingOrRemovingCountsAsDone(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	ctx := ctxT(t)
	pod := testPod("nf", v1.RestartPolicyAlways, v1.Container{Name: "a"}, v1.Container{Name: "b"})
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatal(err)
	}
	// One container vanishes behind our back, the runtime answers NotFound
	// for the other container's stop and for the sandbox stop.
	st := podStatus(t, rt, pod)
	running, _ := rt.GetPods(ctx, false)
	if err := srv.Forget(st.FindContainerStatusByName("a").ID.ID); err != nil {
		t.Fatal(err)
	}
	srv.FailNext("StopContainer", codes.NotFound)
	srv.FailNext("StopPodSandbox", codes.NotFound)
	if err := rt.KillPod(ctx, nil, running[0], nil); err != nil {
		t.Fatalf("KillPod with vanished objects: %v", err)
	}
	// The container answered NotFound and is still running in the fake: the
	// next kill stops it for real.
	if err := rt.KillPod(ctx, pod, nil, nil); err != nil {
		t.Fatal(err)
	}
	srv.FailNext("RemoveContainer", codes.NotFound)
	srv.FailNext("RemovePodSandbox", codes.NotFound)
	if err := rt.RemovePod(ctx, &runtime.Pod{ID: pod.UID}); err != nil {
		t.Fatalf("RemovePod with NotFound answers: %v", err)
	}
	// A container that vanished between list and status is skipped.
	pod2 := testPod("nf2", v1.RestartPolicyAlways, v1.Container{Name: "a"})
	if err := rt.SyncPod(ctx, pod2, nil); err != nil {
		t.Fatal(err)
	}
	srv.FailNext("ContainerStatus", codes.NotFound)
	if st := podStatus(t, rt, pod2); len(st.ContainerStatuses) != 0 || len(st.SandboxStatuses) != 1 {
		t.Fatalf("status with a vanished container: %+v", st)
	}
}

func TestInjectedErrorsAreClassified(t *testing.T) {
	for _, tc := range []struct {
		code codes.Code
		want error
	}{
		{codes.Unavailable, runtime.ErrUnavailable},
		{codes.DeadlineExceeded, runtime.ErrDeadlineExceeded},
		{codes.AlreadyExists, runtime.ErrAlreadyExists},
		{codes.NotFound, runtime.ErrNotFound},
		{codes.InvalidArgument, runtime.ErrInvalidArgument},
		{codes.FailedPrecondition, runtime.ErrFailedPrecondition},
		{codes.Unimplemented, runtime.ErrUnimplemented},
		{codes.ResourceExhausted, runtime.ErrUnknown},
	} {
		t.Run(tc.code.String(), func(t *testing.T) {
			srv, ep := startFake(t, fakecri.Options{})
			rt := newRuntime(t, ep)
			ctx := ctxT(t)
			pod := testPod("e", v1.RestartPolicyAlways, v1.Container{Name: "c"})
			srv.FailNext("RunPodSandbox", tc.code)
			err := rt.SyncPod(ctx, pod, nil)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "ns/e") {
				t.Fatalf("got %v, want %v naming the pod", err, tc.want)
			}
			// Only once: the retry succeeds.
			if err := rt.SyncPod(ctx, pod, nil); err != nil {
				t.Fatalf("retry: %v", err)
			}
		})
	}
}

func TestFailTimesThenRecover(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	ctx := ctxT(t)
	srv.FailTimes("ListContainers", 3, codes.Unavailable)
	failures := 0
	for range 5 {
		if _, err := rt.GetPods(ctx, true); err != nil {
			if !runtime.IsRetryable(err) {
				t.Fatalf("not retryable: %v", err)
			}
			failures++
		}
	}
	if failures != 3 {
		t.Fatalf("%d failures, want 3", failures)
	}
}

func TestUnknownCRIVersion(t *testing.T) {
	_, ep := startFake(t, fakecri.Options{APIVersion: "v1alpha2"})
	rt := newRuntime(t, ep)
	_, err := rt.Version(ctxT(t))
	if !errors.Is(err, runtime.ErrUnimplemented) || !strings.Contains(err.Error(), `"v1alpha2"`) {
		t.Fatalf("got %v, want ErrUnimplemented naming the version", err)
	}
}

func TestInMemoryDialer(t *testing.T) {
	srv := fakecri.New(fakecri.Options{})
	if err := srv.StartInMemory(); err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	rt := newRuntime(t, "", func(o *cri.Options) { o.Dialer = srv.DialContext })
	ctx := ctxT(t)
	st, err := rt.Status(ctx)
	if err != nil || !st.RuntimeReady() || st.Condition(runtime.ConditionNetworkReady).Status {
		t.Fatalf("Status: %+v %v", st, err)
	}
	srv.Down()
	if _, err := rt.GetPods(ctx, true); !errors.Is(err, runtime.ErrUnavailable) {
		t.Fatalf("in-memory server down: %v", err)
	}
	if err := srv.Up(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "reconnect", func() bool { _, err := rt.GetPods(ctx, true); return err == nil })
}
