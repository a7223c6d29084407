package status

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// At most Workers writes are in flight: with two workers and five pods to
// write while every write blocks, two are sent; each write that ends lets
// one more go, until all five are written. The goroutines that write exist
// only while there is a write: none are left once all are done.
func TestWritesInFlightAtMostWorkers(t *testing.T) {
	pods := make([]*v1.Pod, 5)
	for i := range pods {
		pods[i] = testPod(fmt.Sprintf("p%d", i), types.UID(fmt.Sprintf("uid-%d", i)))
	}
	var (
		mu             sync.Mutex
		inFlight, most int
		blocked        []chan struct{} // one per write in flight, oldest first
	)
	// Each write reads the pod as last seen (Options.Pods) before its PATCH:
	// it blocks there, outside the fake clientset (whose lock would let
	// only one request at a time block).
	seen := podsFunc(func(types.UID) (*v1.Pod, bool) {
		c := make(chan struct{})
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		blocked = append(blocked, c)
		mu.Unlock()
		<-c
		mu.Lock()
		inFlight--
		mu.Unlock()
		return nil, false
	})
	h := newHarness(t, func(o *Options) { o.Workers, o.Pods = 2, seen }, pods...)
	// Every write still blocked is let go at cleanup, before the Manager
	// stops, so a failing test ends instead of hanging.
	h.releases = append(h.releases, func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range blocked {
			close(c)
		}
		blocked = nil
	})
	waiting := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(blocked)
	}
	releaseOldest := func() {
		mu.Lock()
		defer mu.Unlock()
		close(blocked[0])
		blocked = blocked[1:]
	}
	before := runtime.NumGoroutine()
	h.run()
	for _, p := range pods {
		if err := h.m.SetPodStatus(context.Background(), p, nil, running(p.Name)); err != nil {
			t.Fatal(err)
		}
	}
	for written := 0; written < len(pods); written++ {
		// The writes not yet let go are in flight, up to two of them.
		want := min(2, len(pods)-written)
		h.eventually(fmt.Sprintf("%d writes in flight after %d done", want, written), func() bool { return waiting() == want })
		releaseOldest()
	}
	h.eventually("every status patched", func() bool { return h.count("patch/status") == len(pods) })
	h.settle()
	mu.Lock()
	if most != 2 {
		t.Errorf("at most %d writes were in flight, want 2", most)
	}
	mu.Unlock()
	// Run's goroutine remains (its dispatcher is that goroutine); no
	// writer does.
	h.eventually("no writer left", func() bool { return runtime.NumGoroutine() <= before+1 })
}

// podsFunc is a Pods whose GetPodByUID is a function; it knows no mirror
// pods.
type podsFunc func(types.UID) (*v1.Pod, bool)

func (f podsFunc) GetPodByUID(uid types.UID) (*v1.Pod, bool) { return f(uid) }

func (podsFunc) GetMirrorPodByPod(*v1.Pod) (*v1.Pod, bool) { return nil, false }
