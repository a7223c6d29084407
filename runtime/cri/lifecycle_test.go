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
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

func TestLifecycle(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	ctx := ctxT(t)
	pod := testPod("web", v1.RestartPolicyAlways, v1.Container{Name: "a"}, v1.Container{Name: "b", Image: "example.com/b:1"})
	pod.Labels = map[string]string{"app": "web"}

	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatalf("SyncPod: %v", err)
	}
	st := podStatus(t, rt, pod)
	if len(st.SandboxStatuses) != 1 || !st.HasReadySandbox() || st.SandboxStatuses[0].Network != "node" {
		t.Fatalf("sandboxes: %+v", st.SandboxStatuses)
	}
	for _, name := range []string{"a", "b"} {
		c := st.FindContainerStatusByName(name)
		if c == nil || c.State != runtime.ContainerStateRunning || c.RestartCount != 0 || c.ID.Type != "fakecri" {
			t.Fatalf("container %s: %+v", name, c)
		}
	}
	// A second sync changes nothing.
	calls := srv.CallCount("CreateContainer")
	if err := rt.SyncPod(ctx, pod, st); err != nil || srv.CallCount("CreateContainer") != calls || srv.CallCount("RunPodSandbox") != 1 {
		t.Fatalf("idempotent SyncPod: err %v, CreateContainer %d→%d, RunPodSandbox %d", err, calls, srv.CallCount("CreateContainer"), srv.CallCount("RunPodSandbox"))
	}

	pods, err := rt.GetPods(ctx, false)
	if err != nil || len(pods) != 1 {
		t.Fatalf("GetPods: %v, %d pods", err, len(pods))
	}
	p := pods[0]
	if p.ID != pod.UID || p.Name != "web" || p.Namespace != "ns" || len(p.Containers) != 2 || len(p.Sandboxes) != 1 {
		t.Fatalf("GetPods: %+v", p)
	}

	if err := rt.RemovePod(ctx, p); !errors.Is(err, runtime.ErrFailedPrecondition) {
		t.Fatalf("RemovePod of a running pod: got %v, want ErrFailedPrecondition", err)
	}
	if err := rt.KillPod(ctx, pod, p, nil); err != nil {
		t.Fatalf("KillPod: %v", err)
	}
	st = podStatus(t, rt, pod)
	if !st.IsTerminal() || len(st.ContainerStatuses) != 2 {
		t.Fatalf("after KillPod: %v terminal=%v", st, st.IsTerminal())
	}
	if running, _ := rt.GetPods(ctx, false); len(running) != 0 {
		t.Fatalf("GetPods(all=false) after kill: %d pods", len(running))
	}
	all, _ := rt.GetPods(ctx, true)
	if len(all) != 1 || all[0].Containers[0].State != runtime.ContainerStateExited {
		t.Fatalf("GetPods(all=true) after kill: %+v", all)
	}
	if err := rt.RemovePod(ctx, all[0]); err != nil {
		t.Fatalf("RemovePod: %v", err)
	}
	if sb, c := srv.Counts(); sb != 0 || c != 0 {
		t.Fatalf("after RemovePod: %d sandboxes, %d containers", sb, c)
	}
	if st := podStatus(t, rt, pod); len(st.ContainerStatuses)+len(st.SandboxStatuses) != 0 || st.Name != "web" {
		t.Fatalf("status of a removed pod: %+v", st)
	}
}

func TestAgentRestartFindsPods(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	ctx := ctxT(t)
	first := newRuntime(t, ep)
	pod := testPod("p", v1.RestartPolicyAlways, v1.Container{Name: "c"})
	grace := int64(7)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	if err := first.SyncPod(ctx, pod, nil); err != nil {
		t.Fatal(err)
	}
	_ = first.Close()

	// The runtime restarts too, keeping its state.
	srv.Down()
	if err := srv.Up(); err != nil {
		t.Fatal(err)
	}
	second := newRuntime(t, ep)
	pods, err := second.GetPods(ctx, false)
	if err != nil || len(pods) != 1 || pods[0].ID != pod.UID || pods[0].FullName() != "p_ns" {
		t.Fatalf("GetPods from a new agent: %v %+v", err, pods)
	}
	// Killed without its spec: the grace period comes from the container's
	// annotations.
	if err := second.KillPod(ctx, nil, pods[0], nil); err != nil {
		t.Fatal(err)
	}
	if gp, ok := srv.StopTimeout(pods[0].Containers[0].ID.ID); !ok || gp != 7 {
		t.Fatalf("stop timeout of a runtime-only pod's container: %d, %v; want 7 from its annotation", gp, ok)
	}
}

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

func TestRestartPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy      v1.RestartPolicy
		exitCode    string
		wantRestart bool
	}{
		{v1.RestartPolicyAlways, "0", true},
		{v1.RestartPolicyAlways, "1", true},
		{v1.RestartPolicyOnFailure, "0", false},
		{v1.RestartPolicyOnFailure, "1", true},
		{v1.RestartPolicyNever, "0", false},
		{v1.RestartPolicyNever, "1", false},
	} {
		t.Run(string(tc.policy)+"/exit"+tc.exitCode, func(t *testing.T) {
			srv, ep := startFake(t, fakecri.Options{})
			rt := newRuntime(t, ep)
			ctx := ctxT(t)
			pod := testPod("r", tc.policy, v1.Container{Name: "job", Args: []string{"exit", tc.exitCode}})
			if err := rt.SyncPod(ctx, pod, nil); err != nil {
				t.Fatal(err)
			}
			st := podStatus(t, rt, pod)
			if c := st.FindContainerStatusByName("job"); c.State != runtime.ContainerStateExited || c.ExitCode != map[string]int{"0": 0, "1": 1}[tc.exitCode] {
				t.Fatalf("job after start: %+v", c)
			}
			if err := rt.SyncPod(ctx, pod, st); err != nil {
				t.Fatal(err)
			}
			st = podStatus(t, rt, pod)
			got := st.FindContainerStatusByName("job").RestartCount
			if (got == 1) != tc.wantRestart {
				t.Fatalf("restart count %d, want restart=%v", got, tc.wantRestart)
			}
			// A pod whose containers have all finished for good loses its
			// sandbox and becomes terminal.
			if st.HasReadySandbox() == !tc.wantRestart {
				t.Fatalf("sandbox ready=%v with restart=%v", st.HasReadySandbox(), tc.wantRestart)
			}
			if !tc.wantRestart && !st.IsTerminal() {
				t.Fatal("finished pod is not terminal")
			}
			// Further syncs of a finished pod change nothing.
			if !tc.wantRestart {
				for range 2 {
					if err := rt.SyncPod(ctx, pod, nil); err != nil {
						t.Fatal(err)
					}
				}
				if n := srv.CallCount("RunPodSandbox"); n != 1 {
					t.Fatalf("RunPodSandbox called %d times for a finished pod, want 1", n)
				}
			}
		})
	}
}

func TestCrashLoopBackOff(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv, ep := startFake(t, fakecri.Options{Clock: clk})
	rt := newRuntime(t, ep, func(o *cri.Options) { o.Clock = clk })
	ctx := ctxT(t)
	pod := testPod("crash", v1.RestartPolicyAlways, v1.Container{Name: "c", Args: []string{"exit", "1"}}, v1.Container{Name: "ok"})

	sync := func() error { return rt.SyncPod(ctx, pod, nil) }
	restarts := func() int { return podStatus(t, rt, pod).FindContainerStatusByName("c").RestartCount }
	if err := sync(); err != nil {
		t.Fatal(err)
	}
	// First restart: at once. Then 10s, 20s, 40s … of back-off.
	if err := sync(); err != nil || restarts() != 1 {
		t.Fatalf("first restart: err %v, restarts %d", err, restarts())
	}
	for i, delay := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second} {
		err := sync()
		if !errors.Is(err, runtime.ErrBackOff) || !strings.Contains(err.Error(), `container "c"`) {
			t.Fatalf("restart %d: got %v, want ErrBackOff naming the container", i+2, err)
		}
		clk.Step(delay - time.Second)
		if err := sync(); !errors.Is(err, runtime.ErrBackOff) {
			t.Fatalf("restart %d, 1s before the back-off ends: got %v", i+2, err)
		}
		clk.Step(time.Second)
		if err := sync(); err != nil || restarts() != i+2 {
			t.Fatalf("restart %d after %s: err %v, restarts %d", i+2, delay, err, restarts())
		}
	}
	// Older dead instances are pruned: one dead instance is kept per container.
	if _, c := srv.Counts(); c != 3 {
		t.Fatalf("%d containers, want 3 (ok, the newest c and its predecessor)", c)
	}
}

func TestSandboxDeathRecreatesSandbox(t *testing.T) {
	for _, tc := range []struct {
		policy      v1.RestartPolicy
		wantNew     bool
		wantRestart bool
	}{
		{v1.RestartPolicyAlways, true, true},
		{v1.RestartPolicyOnFailure, true, true}, // killed: exit 137
		{v1.RestartPolicyNever, false, false},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			srv, ep := startFake(t, fakecri.Options{})
			rt := newRuntime(t, ep)
			ctx := ctxT(t)
			pod := testPod("s", tc.policy, v1.Container{Name: "c"})
			if err := rt.SyncPod(ctx, pod, nil); err != nil {
				t.Fatal(err)
			}
			st := podStatus(t, rt, pod)
			if err := srv.StopSandbox(st.SandboxStatuses[0].ID); err != nil {
				t.Fatal(err)
			}
			if err := rt.SyncPod(ctx, pod, nil); err != nil {
				t.Fatal(err)
			}
			st = podStatus(t, rt, pod)
			if got := len(st.SandboxStatuses) == 2; got != tc.wantNew {
				t.Fatalf("new sandbox: %v, want %v (%+v)", got, tc.wantNew, st.SandboxStatuses)
			}
			if tc.wantNew && (st.SandboxStatuses[0].Attempt != 1 || st.SandboxStatuses[0].State != runtime.SandboxStateReady) {
				t.Fatalf("newest sandbox %+v, want attempt 1, ready", st.SandboxStatuses[0])
			}
			c := st.FindContainerStatusByName("c")
			if (c.State == runtime.ContainerStateRunning && c.RestartCount == 1) != tc.wantRestart {
				t.Fatalf("container %+v, want restarted=%v", c, tc.wantRestart)
			}
		})
	}
}

func TestImages(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{Images: []string{"present:1"}})
	rt := newRuntime(t, ep)
	ctx := ctxT(t)
	pod := testPod("i", v1.RestartPolicyAlways, v1.Container{Name: "a", Image: "present:1"}, v1.Container{Name: "b", Image: "missing:1"})
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatal(err)
	}
	if n := srv.CallCount("ImageStatus"); n != 2 {
		t.Errorf("ImageStatus called %d times, want 2", n)
	}
	if n := srv.CallCount("PullImage"); n != 1 || !srv.HasImage("missing:1") {
		t.Errorf("PullImage called %d times, want 1 (only the missing image)", n)
	}

	never := testPod("n", v1.RestartPolicyAlways, v1.Container{Name: "a", Image: "absent:1", ImagePullPolicy: v1.PullNever})
	err := rt.SyncPod(ctx, never, nil)
	if !errors.Is(err, runtime.ErrNotFound) || !strings.Contains(err.Error(), `container "a"`) {
		t.Fatalf("pull policy Never and a missing image: got %v, want ErrNotFound naming the container", err)
	}

	srv.FailNext("PullImage", 13) // codes.Internal
	err = rt.SyncPod(ctx, testPod("f", v1.RestartPolicyAlways, v1.Container{Name: "a", Image: "other:1"}), nil)
	if !errors.Is(err, runtime.ErrUnknown) || !strings.Contains(err.Error(), `pull image "other:1" of container "a"`) {
		t.Fatalf("failed pull: %v", err)
	}
}

func TestInvalidPods(t *testing.T) {
	_, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want string
	}{
		{"nil pod", nil, "no pod"},
		{"no containers", testPod("x", v1.RestartPolicyAlways), "no containers"},
		{"missing image", func() *v1.Pod {
			p := testPod("x", v1.RestartPolicyAlways, v1.Container{Name: "c"})
			p.Spec.Containers[0].Image = ""
			return p
		}(), `container "c": no image`},
		{"duplicate names", testPod("x", v1.RestartPolicyAlways, v1.Container{Name: "c"}, v1.Container{Name: "c"}), `spec.containers[1] "c": duplicate name`},
		{"no name", testPod("x", v1.RestartPolicyAlways, v1.Container{}), "spec.containers[0] has no name"},
		{"init and regular share a name", func() *v1.Pod {
			p := testPod("x", v1.RestartPolicyAlways, v1.Container{Name: "c"})
			p.Spec.InitContainers = []v1.Container{{Name: "c", Image: "i"}}
			return p
		}(), `spec.containers[0] "c": duplicate name`},
		{"ephemeral containers", func() *v1.Pod {
			p := testPod("x", v1.RestartPolicyAlways, v1.Container{Name: "c"})
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "e", Image: "i"}}}
			return p
		}(), "spec.ephemeralContainers: not supported"},
		{"init container restart policy", func() *v1.Pod {
			p := testPod("x", v1.RestartPolicyAlways, v1.Container{Name: "c"})
			never := v1.ContainerRestartPolicy("Never")
			p.Spec.InitContainers = []v1.Container{{Name: "i", Image: "i", RestartPolicy: &never}}
			return p
		}(), "spec.initContainers[0].restartPolicy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := rt.SyncPod(ctxT(t), tc.pod, nil)
			if !errors.Is(err, runtime.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrInvalidArgument containing %q", err, tc.want)
			}
			if tc.pod != nil && !strings.Contains(err.Error(), "ns/x") {
				t.Fatalf("error %q does not name the pod", err)
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

func TestSpecChangeReplacesRunningContainer(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	ctx := ctxT(t)
	pod := testPod("sc", v1.RestartPolicyAlways, v1.Container{Name: "c", Image: "app:1"}, v1.Container{Name: "same", Image: "app:1"})
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatal(err)
	}
	pod.Spec.Containers[0].Image = "app:2"
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatal(err)
	}
	st := podStatus(t, rt, pod)
	c := st.FindContainerStatusByName("c")
	if c.State != runtime.ContainerStateRunning || c.Image != "app:2" || c.RestartCount != 1 || c.Hash != runtime.HashContainer(&pod.Spec.Containers[0]) {
		t.Fatalf("changed container: %+v", c)
	}
	if same := st.FindContainerStatusByName("same"); same.RestartCount != 0 {
		t.Fatalf("unchanged container restarted: %+v", same)
	}
	if n := srv.CallCount("StopContainer"); n != 1 {
		t.Fatalf("StopContainer called %d times, want 1", n)
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
