package cri_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

const testImage = "localhost/podlife/pause:1.0"

// startFake serves a fakecri.Server on a unix socket in a short temporary
// folder (socket paths are limited to 107 bytes) and stops it at cleanup.
func startFake(t testing.TB, opts fakecri.Options) (*fakecri.Server, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "fcri")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	s := fakecri.New(opts)
	ep, err := s.StartUnix(filepath.Join(dir, "cri.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s, ep
}

func newRuntime(t testing.TB, endpoint string, mutate ...func(*cri.Options)) *cri.Runtime {
	t.Helper()
	o := cri.Options{Endpoint: endpoint, Timeout: 10 * time.Second, VolumeRoot: t.TempDir()}
	if tt, ok := t.(*testing.T); ok {
		o.Logger = testr.New(tt)
	}
	for _, m := range mutate {
		m(&o)
	}
	rt, err := cri.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

func testPod(name string, policy v1.RestartPolicy, containers ...v1.Container) *v1.Pod {
	for i := range containers {
		if containers[i].Image == "" {
			containers[i].Image = testImage
		}
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{RestartPolicy: policy, Containers: containers},
	}
}

func podStatus(t testing.TB, rt runtime.Runtime, pod *v1.Pod) *runtime.PodStatus {
	t.Helper()
	st, err := rt.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatalf("GetPodStatus(%s): %v", pod.Name, err)
	}
	return st
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %s waiting for %s", within, what)
		case <-tick.C:
		}
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
