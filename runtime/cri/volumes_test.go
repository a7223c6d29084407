package cri_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

func TestEmptyDirAndHostPathVolumes(t *testing.T) {
	root := t.TempDir()
	host := t.TempDir()
	_, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep, func(o *cri.Options) { o.VolumeRoot = filepath.Join(root, "pods") })
	ctx := ctxT(t)
	dirOrCreate, fileOrCreate := v1.HostPathDirectoryOrCreate, v1.HostPathFileOrCreate
	pod := testPod("vols", v1.RestartPolicyAlways, v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{
		{Name: "scratch", MountPath: "/scratch"},
		{Name: "scratch", MountPath: "/sub", SubPath: "a/b"},
		{Name: "data", MountPath: "/data", ReadOnly: true},
		{Name: "conf", MountPath: "/etc/x.conf"},
	}})
	pod.Spec.Volumes = []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "data", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: filepath.Join(host, "data"), Type: &dirOrCreate}}},
		{Name: "conf", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: filepath.Join(host, "x.conf"), Type: &fileOrCreate}}},
	}
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(root, "pods", string(pod.UID), "volumes", "kubernetes.io~empty-dir", "scratch")
	for _, p := range []string{empty, filepath.Join(empty, "a/b"), filepath.Join(host, "data")} {
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			t.Fatalf("%s: %v", p, err)
		}
	}
	if fi, err := os.Stat(empty); err != nil || fi.Mode().Perm() != 0o777 {
		t.Fatalf("emptyDir mode %v, %v", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Join(host, "x.conf")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("FileOrCreate: %v", err)
	}
	pods, _ := rt.GetPods(ctx, true)
	if err := rt.KillPod(ctx, pod, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := rt.RemovePod(ctx, pods[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "pods", string(pod.UID))); !os.IsNotExist(err) {
		t.Fatalf("the pod's volumes outlived RemovePod: %v", err)
	}
	if _, err := os.Stat(filepath.Join(host, "data")); err != nil {
		t.Fatalf("RemovePod removed a hostPath: %v", err)
	}
}

func TestHostPathTypeChecks(t *testing.T) {
	host := t.TempDir()
	file := filepath.Join(host, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep, func(o *cri.Options) { o.VolumeRoot = t.TempDir() })
	for _, tc := range []struct {
		path    string
		typ     v1.HostPathType
		wantErr string
	}{
		{host, v1.HostPathDirectory, ""},
		{file, v1.HostPathFile, ""},
		{filepath.Join(host, "missing"), v1.HostPathDirectory, "does not exist"},
		{file, v1.HostPathDirectory, "is not a directory"},
		{host, v1.HostPathFile, "is not a file"},
		{file, v1.HostPathSocket, "is not a socket"},
		{filepath.Join(host, "missing"), v1.HostPathUnset, ""},
	} {
		t.Run(string(tc.typ)+"_"+filepath.Base(tc.path), func(t *testing.T) {
			typ := tc.typ
			pod := testPod("hp"+strings.ToLower(string(tc.typ))+filepath.Base(tc.path), v1.RestartPolicyAlways,
				v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "h", MountPath: "/h"}}})
			pod.Spec.Volumes = []v1.Volume{{Name: "h", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: tc.path, Type: &typ}}}}
			err := rt.SyncPod(ctxT(t), pod, nil)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), `volume "h"`)) {
				t.Fatalf("got %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestTerminationMessageFromFile(t *testing.T) {
	root := t.TempDir()
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep, func(o *cri.Options) { o.VolumeRoot = root })
	ctx := ctxT(t)
	pod := testPod("tm", v1.RestartPolicyNever, v1.Container{Name: "c", TerminationMessagePath: "/dev/termination-log"})
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatal(err)
	}
	// The container writes its message through the mount; here, the test does.
	host := filepath.Join(root, string(pod.UID), "containers", "c", "0")
	if err := os.WriteFile(host, []byte("disk full"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := srv.ExitContainer(podStatus(t, rt, pod).FindContainerStatusByName("c").ID.ID, 1); err != nil {
		t.Fatal(err)
	}
	if c := podStatus(t, rt, pod).FindContainerStatusByName("c"); c.Message != "disk full" || c.ExitCode != 1 || c.Reason != "Error" {
		t.Fatalf("status %+v, want message \"disk full\", exit 1, reason Error", c)
	}
}
