package cri_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// termFile is the host file mounted at the container's
// terminationMessagePath (one per instance).
func termFile(t *testing.T, root string, pod *v1.Pod, name string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, string(pod.UID), "containers", name, "0-*"))
	if err != nil || len(files) != 1 {
		t.Fatalf("termination message files of %s: %v %v", name, files, err)
	}
	return files[0]
}

func exitedStatus(t *testing.T, rt runtime.Runtime, pod *v1.Pod, name string) *runtime.ContainerStatus {
	t.Helper()
	cs := podStatus(t, rt, pod).FindContainerStatusByName(name)
	if cs == nil || cs.State != runtime.ContainerStateExited {
		t.Fatalf("container %s has not exited: %+v", name, cs)
	}
	return cs
}

// The message of an exited container is what it wrote to its
// terminationMessagePath (at most the last 4096 bytes), the file being a
// host file the runtime mounts; RemovePod removes it.
func TestTerminationMessageFromFile(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	root := t.TempDir()
	rt := newRuntime(t, ep, func(o *cri.Options) { o.VolumeRoot = root })
	pod := testPod("term", v1.RestartPolicyNever,
		v1.Container{Name: "default"},
		v1.Container{Name: "custom", TerminationMessagePath: "/tmp/why"},
		v1.Container{Name: "long"})
	if err := rt.SyncPod(ctxT(t), pod, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(termFile(t, root, pod, "default"), []byte("bad config"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(termFile(t, root, pod, "custom"), []byte("all done"), 0o644); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 5000) + "END"
	if err := os.WriteFile(termFile(t, root, pod, "long"), []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, code := range map[string]int32{"default": 1, "custom": 0, "long": 2} {
		if err := srv.ExitContainer(runningID(t, rt, pod, name), code); err != nil {
			t.Fatal(err)
		}
	}
	if cs := exitedStatus(t, rt, pod, "default"); cs.Reason != "Error" || cs.ExitCode != 1 || cs.Message != "bad config" {
		t.Errorf("default path: reason %q, exit code %d, message %q; want Error, 1, \"bad config\"", cs.Reason, cs.ExitCode, cs.Message)
	}
	if cs := exitedStatus(t, rt, pod, "custom"); cs.Reason != "Completed" || cs.Message != "all done" {
		t.Errorf("custom path: reason %q, message %q; want Completed, \"all done\"", cs.Reason, cs.Message)
	}
	if cs := exitedStatus(t, rt, pod, "long"); len(cs.Message) != 4096 || !strings.HasSuffix(cs.Message, "END") {
		t.Errorf("long message: %d bytes ending %q, want the last 4096", len(cs.Message), cs.Message[max(0, len(cs.Message)-10):])
	}
	// An exited container's message is read once: a file changed (or
	// gone) afterwards changes nothing, as the container can no longer
	// write it.
	if err := os.WriteFile(termFile(t, root, pod, "default"), []byte("rewritten"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(termFile(t, root, pod, "custom")); err != nil {
		t.Fatal(err)
	}
	if cs := exitedStatus(t, rt, pod, "default"); cs.Message != "bad config" {
		t.Errorf("default path read again: message %q, want \"bad config\"", cs.Message)
	}
	if cs := exitedStatus(t, rt, pod, "custom"); cs.Message != "all done" {
		t.Errorf("custom path read again: message %q, want \"all done\"", cs.Message)
	}
	if err := rt.KillPod(ctxT(t), pod, nil, nil); err != nil {
		t.Fatal(err)
	}
	pods, err := rt.GetPods(ctxT(t), true)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.ID == pod.UID {
			if err := rt.RemovePod(ctxT(t), p); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(root, string(pod.UID))); !os.IsNotExist(err) {
		t.Errorf("the pod's files survive RemovePod: %v", err)
	}
}

// With FallbackToLogsOnError, an empty file and a non-zero exit code, the
// message is the end of the container's log (CRI log format, partial
// lines joined): its last 80 lines, at most 2048 bytes.
func TestTerminationMessageFallbackToLogs(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	root := t.TempDir()
	rt := newRuntime(t, ep, func(o *cri.Options) { o.VolumeRoot = root })
	fallback := v1.TerminationMessageFallbackToLogsOnError
	pod := testPod("logs", v1.RestartPolicyNever,
		v1.Container{Name: "failed", TerminationMessagePolicy: fallback},
		v1.Container{Name: "many", TerminationMessagePolicy: fallback},
		v1.Container{Name: "succeeded", TerminationMessagePolicy: fallback},
		v1.Container{Name: "file", TerminationMessagePolicy: v1.TerminationMessageReadFile},
		v1.Container{Name: "written", TerminationMessagePolicy: fallback})
	if err := rt.SyncPod(ctxT(t), pod, nil); err != nil {
		t.Fatal(err)
	}
	writeLog := func(name, content string) {
		t.Helper()
		p := filepath.Join(root, string(pod.UID), "logs", name, "0.log")
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const log = "2026-01-01T00:00:00.000000001Z stdout F starting\n" +
		"2026-01-01T00:00:00.000000002Z stderr P open /etc/app.conf: \n" +
		"2026-01-01T00:00:00.000000003Z stderr F no such file\n"
	for _, name := range []string{"failed", "succeeded", "file", "written"} {
		writeLog(name, log)
	}
	var many strings.Builder
	for i := range 100 {
		fmt.Fprintf(&many, "2026-01-01T00:00:00.000000001Z stdout F line %03d %s\n", i, strings.Repeat("y", 10))
	}
	writeLog("many", many.String())
	if err := os.WriteFile(termFile(t, root, pod, "written"), []byte("from the file"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, code := range map[string]int32{"failed": 1, "many": 1, "succeeded": 0, "file": 1, "written": 1} {
		if err := srv.ExitContainer(runningID(t, rt, pod, name), code); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := exitedStatus(t, rt, pod, "failed").Message, "starting\nopen /etc/app.conf: no such file\n"; got != want {
		t.Errorf("failed: message %q, want %q", got, want)
	}
	m := exitedStatus(t, rt, pod, "many").Message
	if lines := strings.Count(m, "\n"); lines != 80 || !strings.HasPrefix(m, "line 020 ") || !strings.HasSuffix(m, "line 099 yyyyyyyyyy\n") {
		t.Errorf("many: %d lines, %q…, want the last 80", lines, m[:min(len(m), 20)])
	}
	for name, want := range map[string]string{"succeeded": "", "file": "", "written": "from the file"} {
		if got := exitedStatus(t, rt, pod, name).Message; got != want {
			t.Errorf("%s: message %q, want %q", name, got, want)
		}
	}

	// The byte bound.
	big := testPod("biglog", v1.RestartPolicyNever, v1.Container{Name: "c", TerminationMessagePolicy: fallback})
	if err := rt.SyncPod(ctxT(t), big, nil); err != nil {
		t.Fatal(err)
	}
	line := "2026-01-01T00:00:00.000000001Z stdout F " + strings.Repeat("z", 1000) + "\n"
	if err := os.WriteFile(filepath.Join(root, string(big.UID), "logs", "c", "0.log"), []byte(strings.Repeat(line, 5)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := srv.ExitContainer(runningID(t, rt, big, "c"), 3); err != nil {
		t.Fatal(err)
	}
	if got := exitedStatus(t, rt, big, "c").Message; len(got) != 2048 {
		t.Errorf("a long log gives %d bytes, want 2048", len(got))
	}
}
