package cri_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// RemovePod moves the pod's folder out of the way at once and deletes it in
// the background: a pod of the same UID started right after gets a folder
// of its own that the deletion never touches, and what an earlier runtime
// left in the trash is deleted too.
func TestRemovePodDeletesTheFolderInTheBackground(t *testing.T) {
	_, ep := startFake(t, fakecri.Options{})
	root := t.TempDir()
	trash := filepath.Join(root, ".podlife-removed")
	leftover := filepath.Join(trash, "from-an-earlier-runtime")
	if err := os.MkdirAll(filepath.Join(leftover, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t, ep, func(o *cri.Options) { o.VolumeRoot = root })
	ctx := ctxT(t)
	pod := testPod("again", v1.RestartPolicyAlways, v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}})
	pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	podDir := filepath.Join(root, string(pod.UID))
	data := filepath.Join(podDir, "volumes", "kubernetes.io~empty-dir", "data")
	zero := int64(0)
	run := func(content string) {
		t.Helper()
		if err := rt.SyncPod(ctx, pod, podStatus(t, rt, pod)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, "x"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	remove := func() {
		t.Helper()
		if err := rt.KillPod(ctx, pod, nil, &zero); err != nil {
			t.Fatal(err)
		}
		if err := rt.RemovePod(ctx, &runtime.Pod{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(podDir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("pod folder right after RemovePod: %v", err)
		}
	}

	run("first")
	remove()
	run("second") // the same UID at once
	eventually(t, 10*time.Second, "the trash emptied", func() bool {
		entries, err := os.ReadDir(trash)
		return err == nil && len(entries) == 0
	})
	if b, err := os.ReadFile(filepath.Join(data, "x")); err != nil || string(b) != "second" {
		t.Fatalf("the second pod's emptyDir after the first one's deletion: %q, %v", b, err)
	}
	remove()
	eventually(t, 10*time.Second, "the trash emptied again", func() bool {
		entries, err := os.ReadDir(trash)
		return err == nil && len(entries) == 0
	})

	// A pod that never had a folder: nothing to do, no error.
	other := testPod("nofolder", v1.RestartPolicyAlways, v1.Container{Name: "c"})
	if err := rt.RemovePod(ctx, &runtime.Pod{ID: other.UID, Name: other.Name, Namespace: other.Namespace}); err != nil {
		t.Fatal(err)
	}
}

// A UID that would name the trash has no folder of its own.
func TestTrashIsNoPodFolder(t *testing.T) {
	_, ep := startFake(t, fakecri.Options{})
	root := t.TempDir()
	rt := newRuntime(t, ep, func(o *cri.Options) { o.VolumeRoot = root })
	pod := testPod("x", v1.RestartPolicyAlways, v1.Container{Name: "c"})
	pod.UID = ".podlife-removed"
	if err := rt.SyncPod(ctxT(t), pod, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, ".podlife-removed")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a pod folder named like the trash: %v", err)
	}
}

// With PodLogsDir, the containers' logs go to
// PodLogsDir/NAMESPACE_NAME_UID/CONTAINER/N.log, the kubelet's layout, and
// RemovePod removes that folder, named or found by the UID.
func TestPodLogsDir(t *testing.T) {
	_, ep := startFake(t, fakecri.Options{})
	root, logs := t.TempDir(), t.TempDir()
	rt := newRuntime(t, ep, func(o *cri.Options) { o.VolumeRoot, o.PodLogsDir = root, logs })
	ctx := ctxT(t)
	zero := int64(0)
	for _, named := range []bool{true, false} {
		pod := testPod("logged", v1.RestartPolicyAlways, v1.Container{Name: "c"})
		if err := rt.SyncPod(ctx, pod, nil); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(logs, pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))
		path, err := rt.ContainerLogPath(ctx, runningID(t, rt, pod, "c"))
		if err != nil || path != filepath.Join(dir, "c", "0.log") {
			t.Errorf("log path %q, %v; want %s", path, err, filepath.Join(dir, "c", "0.log"))
		}
		if _, err := os.Stat(filepath.Join(root, string(pod.UID), "logs")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("logs folder in the pod's folder: %v", err)
		}
		if err := rt.KillPod(ctx, pod, nil, &zero); err != nil {
			t.Fatal(err)
		}
		rp := &runtime.Pod{ID: pod.UID}
		if named {
			rp.Name, rp.Namespace = pod.Name, pod.Namespace
		}
		if err := rt.RemovePod(ctx, rp); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("logs left after RemovePod (named %v): %v", named, err)
		}
	}
	if _, err := cri.New(cri.Options{Endpoint: ep, PodLogsDir: "relative"}); err == nil {
		t.Error("a relative PodLogsDir accepted")
	}
}
