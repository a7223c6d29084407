package cri_test

import (
	"math"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime/fakecri"
)

// A grace period the API server accepts but no clock can hold
// (terminationGracePeriodSeconds: 9223372036854775807) still kills: the
// wait is bounded instead of overflowing into an expired deadline.
func TestHugeGracePeriodKills(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	grace := int64(math.MaxInt64)
	pod := testPod("huge", v1.RestartPolicyAlways, v1.Container{Name: "c"})
	pod.Spec.TerminationGracePeriodSeconds = &grace
	if err := rt.SyncPod(ctxT(t), pod, nil); err != nil {
		t.Fatal(err)
	}
	if err := rt.KillPod(ctxT(t), pod, nil, nil); err != nil {
		t.Fatalf("KillPod with the largest grace period: %v", err)
	}
	if _, running := srv.RunningCounts(); running != 0 {
		t.Errorf("%d containers still run", running)
	}
	// Just past what a time.Duration holds in seconds: multiplied, it wraps
	// to a negative duration.
	override := int64(math.MaxInt64/int64(time.Second)) + 1
	if err := rt.SyncPod(ctxT(t), pod, nil); err != nil {
		t.Fatal(err)
	}
	if err := rt.KillPod(ctxT(t), pod, nil, &override); err != nil {
		t.Fatalf("KillPod with the largest override: %v", err)
	}
}
