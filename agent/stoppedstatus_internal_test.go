package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/podlife/podlife/runtime"
)

// TestWorkerCacheStopped: a stopped status is written into the cache and
// answers GetNewerThan whatever the time asked for, until it is forgotten;
// then the wait is the MemoryCache's again.
func TestWorkerCacheStopped(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	wc := newWorkerCache(runtime.NewCache())
	st := &runtime.PodStatus{ID: "p", Name: "p", Namespace: "ns"}
	wc.setStopped("p", st, t0)

	done, cancel := context.WithCancel(context.Background())
	cancel() // never wait: answer from what is held
	got, err := wc.GetNewerThan(done, "p", t0.Add(time.Hour))
	if err != nil || got != st {
		t.Fatalf("GetNewerThan after setStopped = %v, %v; want the stopped status", got, err)
	}
	if got, _ := wc.Get("p"); got != st {
		t.Errorf("Get = %v; want the stopped status written into the cache", got)
	}
	if uids := wc.stoppedUIDs(); len(uids) != 1 || uids[0] != "p" {
		t.Errorf("stoppedUIDs = %v; want [p]", uids)
	}

	wc.forgetStopped("p")
	if _, err := wc.GetNewerThan(done, "p", t0.Add(time.Hour)); !errors.Is(err, context.Canceled) {
		t.Errorf("GetNewerThan after forgetStopped: err %v; want a wait for a newer status (cut short)", err)
	}
	if got, err := wc.GetNewerThan(done, "p", t0.Add(-time.Second)); err != nil || got != st {
		t.Errorf("GetNewerThan before the read = %v, %v; want the cached status", got, err)
	}
	if uids := wc.stoppedUIDs(); len(uids) != 0 {
		t.Errorf("stoppedUIDs after forgetStopped = %v; want none", uids)
	}
}
