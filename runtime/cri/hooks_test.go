package cri_test

import (
	"context"
	"errors"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// fakeHooks records the hooks run and runs a test's function.
type fakeHooks struct {
	mu  sync.Mutex
	ran []string
	run func(h cri.HookTarget) error
}

func (f *fakeHooks) RunHook(_ context.Context, h cri.HookTarget, _ *v1.LifecycleHandler) error {
	f.mu.Lock()
	f.ran = append(f.ran, h.Container.Name)
	f.mu.Unlock()
	if f.run != nil {
		return f.run(h)
	}
	return nil
}

func execHandler(cmd ...string) *v1.LifecycleHandler {
	return &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: cmd}}
}

func TestPostStartFailureKillsTheContainer(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep) // the default runner: exec through CRI ExecSync
	ctx := ctxT(t)
	pod := testPod("poststart", v1.RestartPolicyAlways, v1.Container{Name: "c", Lifecycle: &v1.Lifecycle{PostStart: execHandler("false")}})
	err := rt.SyncPod(ctx, pod, nil)
	if !errors.Is(err, cri.ErrHook) {
		t.Fatalf("SyncPod: %v, want ErrHook", err)
	}
	st := podStatus(t, rt, pod)
	if c := st.FindContainerStatusByName("c"); c.State != runtime.ContainerStateExited {
		t.Fatalf("container after a failed postStart: %+v", c)
	}
	if srv.CallCount("ExecSync") != 1 {
		t.Fatalf("ExecSync called %d times", srv.CallCount("ExecSync"))
	}
	// It restarts by the policy (the first restart at once).
	pod.Spec.Containers[0].Lifecycle.PostStart = execHandler("true")
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatal(err)
	}
	if c := podStatus(t, rt, pod).FindContainerStatusByName("c"); c.State != runtime.ContainerStateRunning || c.RestartCount != 1 {
		t.Fatalf("after restart: %+v", c)
	}
}

func TestPostStartHTTPGet(t *testing.T) {
	var code int
	var mu sync.Mutex
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path != "/hook" || r.Header.Get("X-Test") != "1" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(code)
	}))
	defer hs.Close()
	host, portStr, _ := net.SplitHostPort(hs.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	_, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	for _, tc := range []struct {
		code    int
		wantErr bool
	}{{200, false}, {500, true}} {
		mu.Lock()
		code = tc.code
		mu.Unlock()
		pod := testPod("http"+strconv.Itoa(tc.code), v1.RestartPolicyAlways, v1.Container{
			Name:  "c",
			Ports: []v1.ContainerPort{{Name: "web", ContainerPort: int32(port)}},
			Lifecycle: &v1.Lifecycle{PostStart: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{
				Host: host, Port: intstr.FromString("web"), Path: "/hook", HTTPHeaders: []v1.HTTPHeader{{Name: "X-Test", Value: "1"}},
			}}},
		})
		if err := rt.SyncPod(ctxT(t), pod, nil); errors.Is(err, cri.ErrHook) != tc.wantErr {
			t.Fatalf("status %d: SyncPod %v, want hook failure %v", tc.code, err, tc.wantErr)
		}
	}
}

func TestPreStopRunsFirstAndShortensTheStop(t *testing.T) {
	for _, tc := range []struct {
		name        string
		grace       int64
		hookTakes   time.Duration
		override    *int64
		wantTimeout int64
	}{
		{"hook time comes out of the grace period", 20, 7 * time.Second, nil, 13},
		{"never below the minimum", 5, 10 * time.Second, nil, 2},
		{"deletion override", 30, 3 * time.Second, func() *int64 { v := int64(10); return &v }(), 7},
		{"absurd grace period is clamped", math.MaxInt64, 0, nil, cri.MaximumGracePeriod},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			srv, ep := startFake(t, fakecri.Options{})
			hooks := &fakeHooks{}
			hooks.run = func(cri.HookTarget) error {
				if srv.CallCount("StopContainer") != 0 {
					t.Error("preStop ran after a StopContainer")
				}
				clk.Step(tc.hookTakes)
				return nil
			}
			rt := newRuntime(t, ep, func(o *cri.Options) { o.Clock = clk; o.HookRunner = hooks })
			ctx := ctxT(t)
			pod := testPod("prestop", v1.RestartPolicyAlways, v1.Container{Name: "c", Lifecycle: &v1.Lifecycle{PreStop: execHandler("true")}}, v1.Container{Name: "plain"})
			pod.Spec.TerminationGracePeriodSeconds = &tc.grace
			if err := rt.SyncPod(ctx, pod, nil); err != nil {
				t.Fatal(err)
			}
			st := podStatus(t, rt, pod)
			if err := rt.KillPod(ctx, pod, nil, tc.override); err != nil {
				t.Fatal(err)
			}
			if to, _ := srv.StopTimeout(st.FindContainerStatusByName("c").ID.ID); to != tc.wantTimeout {
				t.Fatalf("stop timeout %d, want %d", to, tc.wantTimeout)
			}
			if len(hooks.ran) != 1 || hooks.ran[0] != "c" {
				t.Fatalf("hooks run: %v", hooks.ran)
			}
		})
	}
}
