package cri_test

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
)

func realHooksRuntime(t *testing.T) (*cri.Runtime, *record.FakeRecorder) {
	t.Helper()
	rt := newRealRuntime(t, nil)
	rec := record.NewFakeRecorder(100)
	rt.SetRecorder(rec)
	return rt, rec
}

// preStop exec hooks run in the running containers on KillPod, before the
// stop and within the grace period: one leaves its mark in the
// container's termination-message file (which the container can write
// only while it runs), one takes 3 s (the container is stopped after
// that), one fails (FailedPreStopHook; its container is stopped anyway).
func TestRealPreStopHooks(t *testing.T) {
	rt, rec := realHooksRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pod := realPod(testImage)
	hook := func(cmd ...string) *v1.Lifecycle {
		return &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: cmd}}}
	}
	pod.Spec.Containers = []v1.Container{
		{Name: "main", Image: testImage, Lifecycle: hook("/pause", "write", "/dev/termination-log", "0", "prestop ran")},
		{Name: "slow", Image: testImage, Lifecycle: hook("/pause", "exit", "0", "3")},
		{Name: "failing", Image: testImage, Lifecycle: hook("/pause", "exit", "1")},
	}
	pod.Spec.Containers[0].Lifecycle.PostStart = &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/pause", "echo", "started"}}}
	cleanupPod(t, rt, pod)
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatalf("SyncPod: %v", err)
	}
	waitStatus(ctx, t, rt, pod, "all running", func(s *runtime.PodStatus) bool {
		for _, c := range pod.Spec.Containers {
			if cs := s.FindContainerStatusByName(c.Name); cs == nil || cs.State != runtime.ContainerStateRunning {
				return false
			}
		}
		return true
	})
	start := time.Now()
	if err := rt.KillPod(ctx, pod, nil, nil); err != nil {
		t.Fatalf("KillPod: %v", err)
	}
	took := time.Since(start)
	t.Logf("KillPod took %s", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("KillPod took %s, more than the 10 s grace period", took)
	}
	st, err := rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range pod.Spec.Containers {
		if cs := st.FindContainerStatusByName(c.Name); cs == nil || cs.State != runtime.ContainerStateExited {
			t.Fatalf("%s after KillPod: %+v", c.Name, cs)
		}
	}
	if m := st.FindContainerStatusByName("main"); m.Message != "prestop ran" || m.ExitCode != 0 {
		t.Errorf("main: exit %d, message %q; want 0 and the preStop hook's mark", m.ExitCode, m.Message)
	}
	if s := st.FindContainerStatusByName("slow"); s.FinishedAt.Sub(start) < 3*time.Second {
		t.Errorf("slow finished %s after KillPod began, before its 3 s preStop hook ended", s.FinishedAt.Sub(start))
	}
	ev := drain(rec)
	if n := strings.Count(ev, "Warning FailedPreStopHook"); n != 1 {
		t.Errorf("%d FailedPreStopHook warnings, want 1 (the failing hook's), among:\n%s", n, ev)
	}
	if strings.Contains(ev, "FailedPostStartHook") {
		t.Errorf("a postStart hook failed:\n%s", ev)
	}
}

// A container that writes its termination message and exits 1 has
// reason Error, exit code 1 and that message; with FallbackToLogsOnError
// and no message, the end of its log; a failing postStart kills its
// container and fails SyncPod.
func TestRealTerminationMessages(t *testing.T) {
	rt, rec := realHooksRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pod := realPod(testImage)
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	pod.Spec.Containers = []v1.Container{
		{Name: "bad", Image: testImage, Args: []string{"write", "/dev/termination-log", "1", "bad config"}},
		{Name: "logs", Image: testImage, Args: []string{"exit", "1"}, TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError},
		{Name: "poststart", Image: testImage, Lifecycle: &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/pause", "exit", "7"}}}}},
	}
	cleanupPod(t, rt, pod)
	err := rt.SyncPod(ctx, pod, nil)
	if err == nil || !strings.Contains(err.Error(), "PostStartHookError") {
		t.Fatalf("SyncPod: %v, want the postStart hook's failure", err)
	}
	st := waitStatus(ctx, t, rt, pod, "all exited", func(s *runtime.PodStatus) bool {
		for _, c := range pod.Spec.Containers {
			if cs := s.FindContainerStatusByName(c.Name); cs == nil || cs.State != runtime.ContainerStateExited {
				return false
			}
		}
		return true
	})
	if b := st.FindContainerStatusByName("bad"); b.Reason != "Error" || b.ExitCode != 1 || b.Message != "bad config" {
		t.Errorf("bad: reason %q, exit %d, message %q; want Error, 1, \"bad config\"", b.Reason, b.ExitCode, b.Message)
	}
	if l := st.FindContainerStatusByName("logs"); l.Reason != "Error" || l.Message != "pause: exiting with 1\n" {
		t.Errorf("logs: reason %q, message %q; want Error and its log line", l.Reason, l.Message)
	}
	if ev := drain(rec); !strings.Contains(ev, "Warning FailedPostStartHook") {
		t.Errorf("no FailedPostStartHook among:\n%s", ev)
	}
}
