package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/runtime"
)

// gateRuntime's GetPodStatus waits until want calls are in flight at once
// (or a deadline passes, which the test reports), and records the largest
// number of calls in flight.
type gateRuntime struct {
	*listRuntime
	want    int
	reached chan struct{}
	cancel  context.CancelFunc // when set, called by the want-th call

	mu          sync.Mutex
	inFlight    int
	maxInFlight int
	timedOut    bool
}

func (g *gateRuntime) GetPodStatus(ctx context.Context, uid types.UID, name, ns string) (*runtime.PodStatus, error) {
	g.mu.Lock()
	g.inFlight++
	g.maxInFlight = max(g.maxInFlight, g.inFlight)
	if g.inFlight == g.want {
		select {
		case <-g.reached:
		default:
			close(g.reached)
			if g.cancel != nil {
				g.cancel()
			}
		}
	}
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	select {
	case <-g.reached:
	case <-deadline.C:
		g.mu.Lock()
		g.timedOut = true
		g.mu.Unlock()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return g.listRuntime.GetPodStatus(ctx, uid, name, ns)
}

// TestRelisterInspectsChangedPodsInParallel: a relist reads the statuses of
// changed pods with Workers calls in flight at once, never more; the cache
// holds every status, and every event is delivered after it, on the
// relisting goroutine.
func TestRelisterInspectsChangedPodsInParallel(t *testing.T) {
	const workers, pods = 4, 40
	g := &gateRuntime{listRuntime: newListRuntime(), want: workers, reached: make(chan struct{})}
	for i := range pods {
		g.setPod(types.UID(fmt.Sprintf("p%02d", i)), runtime.ContainerStateRunning)
	}
	cache := runtime.NewCache()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var mu sync.Mutex
	events, early := 0, 0
	r, err := runtime.NewRelister(runtime.RelisterOptions{Runtime: g, Cache: cache, Clock: clk, Workers: workers,
		OnEvent: func(e runtime.PodEvent) {
			st, err := cache.Get(e.ID)
			mu.Lock()
			defer mu.Unlock()
			events++
			if err != nil || len(st.ContainerStatuses) != 1 {
				early++
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.ForceRefresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.timedOut {
		t.Errorf("never %d status reads in flight at once (at most %d)", workers, g.maxInFlight)
	}
	if g.maxInFlight > workers {
		t.Errorf("%d status reads in flight at once, want at most %d", g.maxInFlight, workers)
	}
	if n := len(g.takeStatusCalls()); n != pods {
		t.Errorf("%d status reads, want %d", n, pods)
	}
	if events != 2*pods || early != 0 {
		t.Errorf("%d events (want %d), %d of them before the cache held the pod's status", events, 2*pods, early)
	}
	if !r.LastRelist().Equal(clk.Now()) {
		t.Errorf("LastRelist %s, want %s", r.LastRelist(), clk.Now())
	}
}

// TestRelisterCancelledWhileInspecting: a relist whose context ends while
// statuses are read returns the context's error, once every status read has
// returned, and does not count as a relist.
func TestRelisterCancelledWhileInspecting(t *testing.T) {
	const workers, pods = 3, 30
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := &gateRuntime{listRuntime: newListRuntime(), want: workers, reached: make(chan struct{}), cancel: cancel}
	for i := range pods {
		g.setPod(types.UID(fmt.Sprintf("p%02d", i)), runtime.ContainerStateRunning)
	}
	cache := runtime.NewCache()
	var events int
	r, err := runtime.NewRelister(runtime.RelisterOptions{Runtime: g, Cache: cache, Workers: workers,
		OnEvent: func(runtime.PodEvent) { events++ }})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.ForceRefresh(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("ForceRefresh = %v, want context.Canceled", err)
	}
	g.mu.Lock()
	inFlight := g.inFlight
	g.mu.Unlock()
	if inFlight != 0 {
		t.Errorf("%d status reads still in flight after ForceRefresh returned", inFlight)
	}
	if events != 0 || !r.LastRelist().IsZero() {
		t.Errorf("a cancelled relist delivered %d events, LastRelist %s", events, r.LastRelist())
	}
	if _, err := runtime.NewRelister(runtime.RelisterOptions{Runtime: g, Cache: cache, Workers: -1}); err == nil {
		t.Error("Workers -1 accepted")
	}
}

// TestRelisterPodsAfter: PodsAfter relists only when no relist began
// after the given one, and returns what the last relist listed.
func TestRelisterPodsAfter(t *testing.T) {
	r, rt, _, _, _ := newRelister(t)
	ctx := context.Background()
	lists := func() int {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		return rt.lists
	}
	rt.setPod("a", runtime.ContainerStateRunning)
	n0 := r.Begun()
	pods, _, err := r.PodsAfter(ctx, n0) // nothing listed yet: relists
	if err != nil || len(pods) != 1 || pods[0].ID != "a" || lists() != 1 {
		t.Fatalf("PodsAfter(%d) = %v, %v after %d listings; want pod a after 1", n0, pods, err, lists())
	}
	rt.setPod("b", runtime.ContainerStateRunning)
	// The relist began after n0: no new listing, even though the clock
	// never moved.
	if pods, _, err := r.PodsAfter(ctx, n0); err != nil || len(pods) != 1 || lists() != 1 {
		t.Fatalf("PodsAfter(%d) again = %v, %v after %d listings; want the same listing", n0, pods, err, lists())
	}
	n1 := r.Begun()
	if pods, _, err := r.PodsAfter(ctx, n1); err != nil || len(pods) != 2 || lists() != 2 {
		t.Fatalf("PodsAfter(%d) = %v, %v after %d listings; want a and b after 2", n1, pods, err, lists())
	}
	// A periodic relist that began after n2 serves PodsAfter(n2).
	n2 := r.Begun()
	if err := r.ForceRefresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, number, err := r.PodsAfter(ctx, n2); err != nil || lists() != 3 || number != n2+1 {
		t.Fatalf("PodsAfter(%d) after a relist: listing %d, %v after %d listings; want listing %d after 3", n2, number, err, lists(), n2+1)
	}
	// PodsAfter(0) takes the last listing, however old.
	rt.setPod("c", runtime.ContainerStateRunning)
	if pods, _, err := r.PodsAfter(ctx, 0); err != nil || len(pods) != 2 || lists() != 3 {
		t.Fatalf("PodsAfter(0) = %v, %v after %d listings; want the last listing (a, b)", pods, err, lists())
	}
}
