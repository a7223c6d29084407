package podworkertest_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pwt "github.com/podlife/podlife/podworker/podworkertest"
)

func TestFakeSyncerScripts(t *testing.T) {
	f := pwt.NewFakeSyncer()
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "a"}}
	boom := errors.New("boom")
	f.Fail(pwt.SyncPod, "a", 2, boom)
	f.SetTerminal("a", true)
	ctx := context.Background()
	for i, want := range []error{boom, boom, nil} {
		terminal, err := f.SyncPod(ctx, 0, p, nil, nil)
		if !errors.Is(err, want) || terminal != (want == nil) {
			t.Errorf("call %d: %v %v", i, terminal, err)
		}
	}
	if got := f.Methods("a"); len(got) != 3 || got[0] != "SyncPod!" || got[2] != "SyncPod" {
		t.Errorf("Methods = %v", got)
	}
	gp := int64(7)
	if err := f.SyncTerminatingPod(ctx, p, nil, &gp, nil); err != nil {
		t.Fatal(err)
	}
	if c := f.CallsFor("a")[3]; c.GracePeriod != 7 || c.Method != pwt.SyncTerminatingPod {
		t.Errorf("call = %v", c)
	}
	if n := f.Count(pwt.SyncPod, ""); n != 3 {
		t.Errorf("Count = %d", n)
	}
}

func TestFakeSyncerGateAndOverlap(t *testing.T) {
	f := pwt.NewFakeSyncer()
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "a"}}
	gate := f.Block(pwt.SyncPod, "")
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, err := f.SyncPod(ctx, 0, p, nil, nil); first <- err }()
	<-gate.Entered()
	if !f.InFlight("a") {
		t.Fatal("call not in flight")
	}
	// A second call for the same pod while the first runs is an overlap.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _, _ = f.SyncPod(context.Background(), 0, p, nil, nil) }()
	pwt.WaitFor(t, 0, "overlap recorded", func() bool { return len(f.Overlaps()) == 1 })
	// Cancelled while the gate is still shut: the blocked call returns
	// the context's error. (Releasing first would race the two.)
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Errorf("blocked call returned %v, want context.Canceled", err)
	}
	gate.Release()
	wg.Wait()
}

func TestPollTimesOut(t *testing.T) {
	if err := pwt.Poll(1, func() bool { return false }); err == nil {
		t.Fatal("want a timeout")
	}
}
