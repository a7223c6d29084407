package cri_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
)

// The tests against a real CRI runtime (the Real* tests) share these.

// realEndpoint returns the real runtime's endpoint (EndpointEnv), or skips
// the test without one.
func realEndpoint(t *testing.T) string {
	t.Helper()
	endpoint := os.Getenv(EndpointEnv)
	if endpoint == "" {
		t.Skip(EndpointEnv + " is not set: skipping the integration test against a real CRI runtime " +
			"(start one with `sock=$(bash scripts/containerd/start.sh)` and set " + EndpointEnv + "=unix://$sock)")
	}
	return endpoint
}

// realImage is the image the real runtime's test pods run:
// PODLIFE_CRI_IMAGE, else the project's test image.
func realImage() string {
	if image := os.Getenv("PODLIFE_CRI_IMAGE"); image != "" {
		return image
	}
	return testImage
}

// newRealRuntime connects to the real runtime (skipping the test without
// one) with the tests' options, changed by edit: a 30 s timeout, the cgroup
// parent /podlife-test, the test's logger, a VolumeRoot of its own. It is
// closed when the test ends.
func newRealRuntime(t *testing.T, edit func(*cri.Options)) *cri.Runtime {
	t.Helper()
	opts := cri.Options{Endpoint: realEndpoint(t), Timeout: 30 * time.Second, CgroupParent: "/podlife-test",
		VolumeRoot: t.TempDir(), Logger: testr.New(t)}
	if edit != nil {
		edit(&opts)
	}
	rt, err := cri.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

// realContext is a test's bound on the real runtime.
func realContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// cleanupPod kills and removes pod when the test ends, whatever happened.
func cleanupPod(t *testing.T, rt *cri.Runtime, pod *v1.Pod) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		zero := int64(0)
		_ = rt.KillPod(ctx, pod, nil, &zero)
		_ = rt.RemovePod(ctx, &runtime.Pod{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace})
	})
}

// killAndRemove kills pod and removes it, as the agent's pod worker does:
// a RemovePod refused because something still runs (a runtime may report
// a container it just stopped as running for a moment) is preceded by
// another KillPod and tried again, a few times.
func killAndRemove(ctx context.Context, t *testing.T, rt *cri.Runtime, pod *v1.Pod) {
	t.Helper()
	zero := int64(0)
	var err error
	for attempt := range 5 {
		if err = rt.KillPod(ctx, pod, nil, &zero); err != nil {
			t.Fatalf("KillPod: %v", err)
		}
		err = rt.RemovePod(ctx, &runtime.Pod{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace})
		if !errors.Is(err, runtime.ErrFailedPrecondition) {
			break
		}
		t.Logf("RemovePod, attempt %d: %v", attempt+1, err)
	}
	if err != nil {
		t.Fatalf("RemovePod: %v", err)
	}
}
