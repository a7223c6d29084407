package podworker_test

import (
	"fmt"
	goruntime "runtime"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/podworker"
	pwt "github.com/podlife/podlife/podworker/podworkertest"
)

// A burst of pods larger than the number of goroutines the driver starts at
// once must still give every pod a goroutine of its own: a pod never waits
// for another pod's Syncer call, here every SyncPod blocks until released.
func TestBurstOfBlockedPodsAllRunAtOnce(t *testing.T) {
	h := newHarness(t).run()
	gate := h.f.Block(pwt.SyncPod, "")
	const n = 300
	uids := make([]types.UID, n)
	for i := range uids {
		uids[i] = types.UID(fmt.Sprintf("u%d", i))
		h.w.UpdatePod(create(newPod(string(uids[i]), fmt.Sprintf("p%d", i))))
	}
	pwt.WaitFor(t, 0, "every pod in SyncPod at once", func() bool {
		for _, uid := range uids {
			if !h.f.InFlight(uid) {
				return false
			}
		}
		return true
	})
	gate.Release()
	h.idle()
	for _, uid := range uids {
		h.lifecycle(uid, podworker.LifecycleSyncing)
	}
}

// Once the pods are idle only a few parked goroutines remain, whatever the
// burst; all of them end when Run returns.
func TestIdleWorkersHoldFewGoroutines(t *testing.T) {
	base := goruntime.NumGoroutine()
	h := newHarness(t).run()
	const n = 2000
	for i := range n {
		h.w.UpdatePod(create(newPod(fmt.Sprintf("u%d", i), fmt.Sprintf("p%d", i))))
	}
	pwt.WaitFor(t, 0, "every pod synced", func() bool { return h.f.Count(pwt.SyncPod, "") == n })
	h.idle()
	// Run's own goroutine and at most max(2, GOMAXPROCS) parked ones.
	limit := base + 1 + max(2, goruntime.GOMAXPROCS(0))
	pwt.WaitFor(t, 0, "few goroutines", func() bool { return goruntime.NumGoroutine() <= limit })
	h.stop()
	pwt.WaitFor(t, 0, "no goroutine after Run returned", func() bool { return goruntime.NumGoroutine() <= base })
}
