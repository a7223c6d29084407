package cri_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

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

// A container that exits at once and restarts for ever keeps, besides its
// newest instance, at most one dead instance in the runtime, and the
// files of the removed ones (CRI log, termination-message file) go with
// them.
func TestRestartsKeepOneDeadInstanceAndItsFiles(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv, ep := startFake(t, fakecri.Options{Clock: clk})
	root := t.TempDir()
	rt := newRuntime(t, ep, func(o *cri.Options) {
		o.Clock, o.VolumeRoot = clk, root
		o.BackOffInitial, o.BackOffMax = time.Second, time.Second
	})
	ctx := ctxT(t)
	pod := testPod("loop", v1.RestartPolicyAlways, v1.Container{Name: "c", Args: []string{"exit", "1"}})
	files := func(sub string) int {
		entries, err := os.ReadDir(filepath.Join(root, string(pod.UID), sub, "c"))
		if err != nil {
			t.Fatal(err)
		}
		return len(entries)
	}
	for i := range 30 {
		if err := rt.SyncPod(ctx, pod, nil); err != nil && !errors.Is(err, runtime.ErrBackOff) {
			t.Fatalf("sync %d: %v", i, err)
		}
		clk.Step(2 * time.Second)
		if _, n := srv.Counts(); n > 2 {
			t.Fatalf("after sync %d: %d instances of the container, want at most 2 (the newest and one dead)", i, n)
		}
		if n := files("logs"); n > 2 {
			t.Fatalf("after sync %d: %d log files, want at most 2", i, n)
		}
		if n := files("containers"); n > 2 {
			t.Fatalf("after sync %d: %d termination-message files, want at most 2", i, n)
		}
	}
	if got := podStatus(t, rt, pod).FindContainerStatusByName("c").RestartCount; got < 10 {
		t.Fatalf("restart count %d, want the container restarted at every sync", got)
	}
}

// RemoveContainer removes a dead container with its log and
// termination-message files; RemoveSandbox stops and removes a sandbox;
// both take a vanished object as removed.
func TestRemoveContainerAndSandbox(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	root := t.TempDir()
	rt := newRuntime(t, ep, func(o *cri.Options) { o.VolumeRoot = root })
	ctx := ctxT(t)
	pod := testPod("rm", v1.RestartPolicyNever, v1.Container{Name: "c", Args: []string{"exit", "0"}})
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatal(err)
	}
	st := podStatus(t, rt, pod)
	c := st.FindContainerStatusByName("c")
	log := filepath.Join(root, string(pod.UID), "logs", "c", "0.log")
	if err := os.WriteFile(log+".20260101-000000.gz", nil, 0o644); err != nil { // a rotated file
		t.Fatal(err)
	}
	if err := rt.RemoveContainer(ctx, c.ID.ID); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"logs/c", "containers/c"} {
		if entries, err := os.ReadDir(filepath.Join(root, string(pod.UID), sub)); err != nil || len(entries) != 0 {
			t.Errorf("%s after RemoveContainer: %d entries, %v", sub, len(entries), err)
		}
	}
	if err := rt.RemoveContainer(ctx, c.ID.ID); err != nil {
		t.Fatalf("a container removed twice: %v", err)
	}
	sb := st.SandboxStatuses[0].ID
	if err := rt.RemoveSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if n, _ := srv.Counts(); n != 0 {
		t.Fatalf("%d sandboxes after RemoveSandbox", n)
	}
	if err := rt.RemoveSandbox(ctx, sb); err != nil {
		t.Fatalf("a sandbox removed twice: %v", err)
	}
}
