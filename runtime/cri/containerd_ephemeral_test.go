package cri_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime"
)

// TestRealRuntimeEphemeralContainer runs, on a real CRI runtime, what
// kubectl debug --target does: an ephemeral container added to a running
// pod starts in the next sync, in the PID namespace of its target (the
// same namespace, where the target's process is PID 1 and shows in the
// debugger's /proc), exits, and is never started again, under
// RestartPolicy Always.
func TestRealRuntimeEphemeralContainer(t *testing.T) {
	rt := newRealRuntime(t, nil)
	image := realImage()
	ctx := realContext(t, 2*time.Minute)
	pod := realPod(image)
	pod.Spec.Containers = pod.Spec.Containers[:1] // main, which sleeps
	cleanupPod(t, rt, pod)

	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatalf("SyncPod: %v", err)
	}
	st := waitStatus(ctx, t, rt, pod, "main running", func(s *runtime.PodStatus) bool {
		m := s.FindContainerStatusByName("main")
		return m != nil && m.State == runtime.ContainerStateRunning
	})
	main := st.FindContainerStatusByName("main")

	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger", Image: image, ImagePullPolicy: v1.PullIfNotPresent,
			Args: []string{"exit", "7", "10"}, Stdin: true, TTY: true},
		TargetContainerName: "main",
	}}
	if err := rt.SyncPod(ctx, pod, st); err != nil {
		t.Fatalf("SyncPod with the ephemeral container: %v", err)
	}
	st = waitStatus(ctx, t, rt, pod, "debugger running", func(s *runtime.PodStatus) bool {
		d := s.FindContainerStatusByName("debugger")
		return d != nil && d.State != runtime.ContainerStateCreated
	})
	debugger := st.FindContainerStatusByName("debugger")
	if debugger.State != runtime.ContainerStateRunning {
		t.Fatalf("debugger: %s (exit %d, %s %s)", debugger.State, debugger.ExitCode, debugger.Reason, debugger.Message)
	}

	// One PID namespace: the same namespace link, main is PID 1 in it and
	// the debugger is not, and the debugger's /proc shows main.
	mainPID := containerPID(ctx, t, realEndpoint(t), main.ID.ID)
	debuggerPID := containerPID(ctx, t, realEndpoint(t), debugger.ID.ID)
	nsOf := func(pid int) string {
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
		if err != nil {
			t.Fatal(err)
		}
		return ns
	}
	if a, b := nsOf(mainPID), nsOf(debuggerPID); a != b {
		t.Errorf("PID namespaces: main %s, debugger %s; want the same", a, b)
	}
	if got := innerPID(t, mainPID); got != "1" {
		t.Errorf("main is PID %s in its namespace, want 1", got)
	}
	if got := innerPID(t, debuggerPID); got == "1" {
		t.Errorf("the debugger is PID 1 in the shared namespace")
	}
	cmdline, err := os.ReadFile(filepath.Join(fmt.Sprintf("/proc/%d/root", debuggerPID), "proc", "1", "cmdline"))
	if err != nil {
		t.Fatalf("PID 1 as the debugger sees it: %v", err)
	}
	if got := strings.TrimRight(strings.ReplaceAll(string(cmdline), "\x00", " "), " "); got != "/pause" {
		t.Errorf("PID 1 in the debugger's /proc runs %q, want main's /pause", got)
	}

	// It exits, and stays exited.
	st = waitStatus(ctx, t, rt, pod, "debugger exited", func(s *runtime.PodStatus) bool {
		return s.FindContainerStatusByName("debugger").State == runtime.ContainerStateExited
	})
	for range 3 {
		if err := rt.SyncPod(ctx, pod, st); err != nil {
			t.Fatalf("SyncPod after the debugger exited: %v", err)
		}
		st = podStatus(t, rt, pod)
	}
	if got := instances(st, "debugger"); len(got) != 1 || got[0].ExitCode != 7 || got[0].RestartCount != 0 || got[0].State != runtime.ContainerStateExited {
		t.Errorf("debugger after three more syncs: %d instances, first %+v; want one, exited 7", len(got), got[0])
	}
	if m := st.FindContainerStatusByName("main"); m.ID != main.ID || m.State != runtime.ContainerStateRunning {
		t.Errorf("main: %s %s, want %s running", m.ID, m.State, main.ID)
	}
	killAndRemove(ctx, t, rt, pod)
}

// innerPID is the PID of a process in its innermost PID namespace (the
// last field of NSpid in /proc/PID/status).
func innerPID(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(v)
			return f[len(f)-1]
		}
	}
	t.Fatalf("no NSpid in /proc/%d/status", pid)
	return ""
}
