package cri_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// TestSyncPodLogsPlan: each SyncPod logs its plan at verbosity 4, in one
// line that says why each container is started or left alone.
func TestSyncPodLogsPlan(t *testing.T) {
	var mu sync.Mutex
	var plans []string
	log := funcr.New(func(prefix, args string) {
		if strings.Contains(args, `"msg"="sync plan"`) {
			mu.Lock()
			plans = append(plans, args)
			mu.Unlock()
		}
	}, funcr.Options{Verbosity: 4})
	_, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep, func(o *cri.Options) { o.Logger = log })
	ctx := ctxT(t)
	pod := testPod("web", v1.RestartPolicyAlways, v1.Container{Name: "a"})
	for range 2 {
		if err := rt.SyncPod(ctx, pod, nil); err != nil {
			t.Fatalf("SyncPod: %v", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(plans) != 2 {
		t.Fatalf("got %d plan lines, want one a sync: %q", len(plans), plans)
	}
	for i, want := range []string{"sandbox: create attempt 0 (no sandbox); container a: start #0 (no instance)", "container a: keep (running)"} {
		if !strings.Contains(plans[i], want) || strings.Contains(plans[i], "\n") {
			t.Errorf("plan %d: got %s, want one line with %q", i, plans[i], want)
		}
	}
}
