package cri_test

import (
	"errors"
	"os"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/fakecri"
)

// ReopenContainerLog reaches the runtime: after a rotation renamed a
// running container's log, the runtime writes a new file at its path; a
// container that has exited is refused, with a classified error.
func TestReopenContainerLog(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	ctx := ctxT(t)
	pod := testPod("reopen", v1.RestartPolicyNever, v1.Container{Name: "main", Args: []string{"log", "first"}})
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatal(err)
	}
	id := podStatus(t, rt, pod).FindContainerStatusByName("main").ID.ID
	path, err := rt.ContainerLogPath(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, path+".rotated"); err != nil {
		t.Fatal(err)
	}
	if err := rt.ReopenContainerLog(ctx, id); err != nil {
		t.Fatalf("ReopenContainerLog: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no new log file after the reopen: %v", err)
	}
	if err := srv.ExitContainer(id, 0); err != nil {
		t.Fatal(err)
	}
	if err := rt.ReopenContainerLog(ctx, id); !errors.Is(err, runtime.ErrUnknown) {
		t.Fatalf("reopen of an exited container: %v, want runtime.ErrUnknown", err)
	}
	if err := rt.ReopenContainerLog(ctx, "gone"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("reopen of an unknown container: %v, want runtime.ErrNotFound", err)
	}
}
