package runtime_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/runtime"
)

// listRuntime is a scriptable runtime.Runtime for the relister: it serves
// a set of pods and counts the calls.
type listRuntime struct {
	mu          sync.Mutex
	pods        map[types.UID]*runtime.Pod
	listErr     error
	statusErr   map[types.UID]error
	statusCalls []types.UID
	lists       int
	// inList, when set, runs inside each GetPods, without the lock.
	inList func()
	// unlisted are containers GetPodStatus reports and GetPods does not:
	// created between a listing and an inspection.
	unlisted map[types.UID][]*runtime.ContainerStatus
}

func newListRuntime() *listRuntime {
	return &listRuntime{pods: map[types.UID]*runtime.Pod{}, statusErr: map[types.UID]error{}}
}

func (f *listRuntime) setPod(uid types.UID, containers ...runtime.ContainerState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := &runtime.Pod{ID: uid, Name: string(uid), Namespace: "ns",
		Sandboxes: []*runtime.Container{{ID: runtime.ContainerID{Type: "t", ID: string(uid) + "-sb"}, State: runtime.ContainerStateRunning}}}
	for i, s := range containers {
		p.Containers = append(p.Containers, &runtime.Container{ID: runtime.ContainerID{Type: "t", ID: string(uid) + "-c" + string(rune('0'+i))}, Name: "c", State: s})
	}
	f.pods[uid] = p
}

func (f *listRuntime) GetPods(context.Context, bool) ([]*runtime.Pod, error) {
	f.mu.Lock()
	in := f.inList
	f.mu.Unlock()
	if in != nil {
		in()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	if f.listErr != nil {
		return nil, f.listErr
	}
	var out []*runtime.Pod
	for _, p := range f.pods {
		out = append(out, p)
	}
	return out, nil
}

func (f *listRuntime) GetPodStatus(_ context.Context, uid types.UID, name, ns string) (*runtime.PodStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statusCalls = append(f.statusCalls, uid)
	if err := f.statusErr[uid]; err != nil {
		return nil, err
	}
	st := &runtime.PodStatus{ID: uid, Name: name, Namespace: ns}
	if p := f.pods[uid]; p != nil {
		for _, c := range p.Containers {
			st.ContainerStatuses = append(st.ContainerStatuses, &runtime.ContainerStatus{ID: c.ID, Name: c.Name, State: c.State})
		}
	}
	st.ContainerStatuses = append(st.ContainerStatuses, f.unlisted[uid]...)
	return st, nil
}

func (f *listRuntime) takeStatusCalls() []types.UID {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.statusCalls
	f.statusCalls = nil
	slices.Sort(c)
	return c
}

func (f *listRuntime) SyncPod(context.Context, *v1.Pod, *runtime.PodStatus) error { return nil }
func (f *listRuntime) KillPod(context.Context, *v1.Pod, *runtime.Pod, *int64) error {
	return nil
}
func (f *listRuntime) RemovePod(context.Context, *runtime.Pod) error { return nil }
func (f *listRuntime) Status(context.Context) (*runtime.Status, error) {
	return &runtime.Status{}, nil
}
func (f *listRuntime) Version(context.Context) (*runtime.VersionInfo, error) {
	return &runtime.VersionInfo{}, nil
}

var _ runtime.Runtime = (*listRuntime)(nil)

type recorder struct {
	mu     sync.Mutex
	events []runtime.PodEvent
}

func (r *recorder) record(e runtime.PodEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) take() []runtime.PodEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.events
	r.events = nil
	slices.SortFunc(e, func(a, b runtime.PodEvent) int {
		if a.ContainerID < b.ContainerID {
			return -1
		}
		if a.ContainerID > b.ContainerID {
			return 1
		}
		return 0
	})
	return e
}

func newRelister(t *testing.T) (*runtime.Relister, *listRuntime, *runtime.MemoryCache, *recorder, *clocktesting.FakeClock) {
	t.Helper()
	rt := newListRuntime()
	cache := runtime.NewCache()
	rec := &recorder{}
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, err := runtime.NewRelister(runtime.RelisterOptions{Runtime: rt, Cache: cache, Clock: clk, OnEvent: rec.record})
	if err != nil {
		t.Fatal(err)
	}
	return r, rt, cache, rec, clk
}

func TestRelisterEventsAndCache(t *testing.T) {
	r, rt, cache, rec, clk := newRelister(t)
	ctx := context.Background()
	rt.setPod("a", runtime.ContainerStateRunning)
	rt.setPod("b", runtime.ContainerStateCreated)

	start := clk.Now()
	if err := r.ForceRefresh(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]runtime.PodEvent{
		{ID: "a", Type: runtime.ContainerStarted, ContainerID: "a-c0"},
		{ID: "a", Type: runtime.ContainerStarted, ContainerID: "a-sb"},
		{ID: "b", Type: runtime.ContainerChanged, ContainerID: "b-c0"},
		{ID: "b", Type: runtime.ContainerStarted, ContainerID: "b-sb"},
	}, rec.take()); diff != "" {
		t.Errorf("first relist events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]types.UID{"a", "b"}, rt.takeStatusCalls()); diff != "" {
		t.Errorf("statuses read: %s", diff)
	}
	if st, err := cache.Get("a"); err != nil || st.FindContainerStatusByName("c").State != runtime.ContainerStateRunning {
		t.Fatalf("cache of a: %+v %v", st, err)
	}
	if !r.LastRelist().Equal(start) {
		t.Fatalf("LastRelist %s, want %s", r.LastRelist(), start)
	}
	// The whole cache is stamped: a reader waiting for anything after just
	// before the relist returns at once, even for a pod never seen.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cache.GetNewerThan(wctx, "never-seen", start.Add(-time.Nanosecond)); err != nil {
		t.Fatal(err)
	}

	// Nothing changed: no event, no status read.
	clk.Step(time.Second)
	if err := r.ForceRefresh(ctx); err != nil {
		t.Fatal(err)
	}
	if ev, calls := rec.take(), rt.takeStatusCalls(); len(ev) != 0 || len(calls) != 0 {
		t.Fatalf("unchanged relist: events %v, status reads %v", ev, calls)
	}

	// a's container dies, b disappears.
	rt.setPod("a", runtime.ContainerStateExited)
	rt.mu.Lock()
	delete(rt.pods, "b")
	rt.mu.Unlock()
	clk.Step(time.Second)
	if err := r.ForceRefresh(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]runtime.PodEvent{
		{ID: "a", Type: runtime.ContainerDied, ContainerID: "a-c0"},
		{ID: "b", Type: runtime.ContainerRemoved, ContainerID: "b-c0"},
		{ID: "b", Type: runtime.ContainerRemoved, ContainerID: "b-sb"},
	}, rec.take()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]types.UID{"a"}, rt.takeStatusCalls()); diff != "" {
		t.Errorf("statuses read: %s", diff)
	}
	if st, _ := cache.Get("b"); len(st.ContainerStatuses) != 0 || st.Name != "b" || !st.IsTerminal() {
		t.Fatalf("cache of a vanished pod: %+v", st)
	}
}

func TestRelisterStatusErrorIsReinspected(t *testing.T) {
	r, rt, cache, rec, clk := newRelister(t)
	ctx := context.Background()
	boom := errors.New("boom")
	rt.setPod("a", runtime.ContainerStateRunning)
	rt.statusErr["a"] = boom
	if err := r.ForceRefresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Get("a"); !errors.Is(err, boom) {
		t.Fatalf("cache error: %v", err)
	}
	if ev := rec.take(); !slices.Contains(ev, runtime.PodEvent{ID: "a", Type: runtime.PodSync}) {
		t.Fatalf("events %v: want a PodSync for a", ev)
	}
	rt.takeStatusCalls()
	rt.mu.Lock()
	delete(rt.statusErr, "a")
	rt.mu.Unlock()
	clk.Step(time.Second)
	if err := r.ForceRefresh(ctx); err != nil {
		t.Fatal(err)
	}
	if calls := rt.takeStatusCalls(); !slices.Equal(calls, []types.UID{"a"}) {
		t.Fatalf("reinspection: status reads %v", calls)
	}
	if _, err := cache.Get("a"); err != nil {
		t.Fatalf("cache after reinspection: %v", err)
	}
}

func TestRelisterListErrorDoesNotStampTheCache(t *testing.T) {
	r, rt, cache, _, clk := newRelister(t)
	rt.listErr = runtime.ErrUnavailable
	if err := r.ForceRefresh(context.Background()); !errors.Is(err, runtime.ErrUnavailable) {
		t.Fatalf("got %v", err)
	}
	if !r.LastRelist().IsZero() {
		t.Fatal("LastRelist set by a failed relist")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := cache.GetNewerThan(ctx, "x", clk.Now().Add(-time.Hour)); err == nil {
		t.Fatal("the cache was stamped by a failed relist")
	}
}

func TestRelisterForceUpdateIfOlder(t *testing.T) {
	r, rt, _, _, clk := newRelister(t)
	ctx := context.Background()
	first := clk.Now()
	if err := r.ForceUpdateIfOlder(ctx, first); err != nil || rt.lists != 1 {
		t.Fatalf("first: %v, %d lists", err, rt.lists)
	}
	if err := r.ForceUpdateIfOlder(ctx, first); err != nil || rt.lists != 1 {
		t.Fatalf("data not older: %v, %d lists, want no relist", err, rt.lists)
	}
	clk.Step(time.Second)
	if err := r.ForceUpdateIfOlder(ctx, clk.Now()); err != nil || rt.lists != 2 {
		t.Fatalf("data older: %v, %d lists, want a relist", err, rt.lists)
	}
}

func TestRelisterRun(t *testing.T) {
	r, rt, _, rec, clk := newRelister(t)
	rt.setPod("a", runtime.ContainerStateRunning)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	lists := func() int { rt.mu.Lock(); defer rt.mu.Unlock(); return rt.lists }
	poll(t, "first relist's events", func() bool { rec.mu.Lock(); defer rec.mu.Unlock(); return len(rec.events) == 2 })
	poll(t, "the ticker", clk.HasWaiters)
	rec.take()
	rt.setPod("a", runtime.ContainerStateExited)
	clk.Step(time.Second)
	poll(t, "relist on tick", func() bool { return lists() == 2 })
	poll(t, "ContainerDied event", func() bool {
		return slices.Contains(rec.take(), runtime.PodEvent{ID: "a", Type: runtime.ContainerDied, ContainerID: "a-c0"})
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

// A relist that lasts longer than Interval (the listing of a huge node) is
// followed by a wait of Interval, as the kubelet's PLEG waits its period
// after each relist, not by another relist at once.
func TestRelisterWaitsIntervalAfterALongRelist(t *testing.T) {
	r, rt, _, _, clk := newRelister(t)
	rt.setPod("a", runtime.ContainerStateRunning)
	var mu sync.Mutex
	var starts []time.Time // of each listing, on the clock
	rt.mu.Lock()
	rt.inList = func() {
		mu.Lock()
		starts = append(starts, clk.Now())
		first := len(starts) == 1
		mu.Unlock()
		if first {
			clk.Step(3 * time.Second) // the first listing takes 3 s
		}
	}
	rt.mu.Unlock()
	listed := func(n int) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return len(starts) >= n }
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	poll(t, "the first relist", listed(1))
	poll(t, "a wait after it", clk.HasWaiters)
	end := clk.Now() // the first relist's end: the clock moves no more by itself
	clk.Step(time.Second)
	poll(t, "the next relist", listed(2))
	mu.Lock()
	defer mu.Unlock()
	if want := end.Add(time.Second); starts[1].Before(want) {
		t.Errorf("the relist after a 3 s relist began %s after it ended, want the 1 s interval", starts[1].Sub(end))
	}
}

func TestRelisterOptionsValidation(t *testing.T) {
	if _, err := runtime.NewRelister(runtime.RelisterOptions{Interval: -1}); err == nil {
		t.Fatal("no error for missing Runtime, Cache and negative Interval")
	}
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

func TestRelisterConcurrentRefreshes(t *testing.T) {
	r, rt, cache, _, clk := newRelister(t)
	for i := range 10 {
		rt.setPod(types.UID(string(rune('a'+i))), runtime.ContainerStateRunning)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				var err error
				if (i+j)%2 == 0 {
					err = r.ForceRefresh(ctx)
				} else {
					err = r.ForceUpdateIfOlder(ctx, clk.Now())
				}
				if err != nil {
					t.Error(err)
					return
				}
				if (i+j)%5 == 0 {
					rt.setPod("a", []runtime.ContainerState{runtime.ContainerStateRunning, runtime.ContainerStateExited}[j%2])
				}
			}
		})
	}
	wg.Wait()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st, err := cache.Get("j"); err != nil || len(st.ContainerStatuses) != 1 {
		t.Fatalf("cache of j: %+v %v", st, err)
	}
	// A refresh waiting for the relist slot gives up with its context.
	if err := r.ForceRefresh(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("ForceRefresh with a cancelled context: %v", err)
	}
}

// TestRelisterKick: a kicked Run relists MinKickInterval after the last
// relist began, long before its Interval.
func TestRelisterKick(t *testing.T) {
	rt := newListRuntime()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, err := runtime.NewRelister(runtime.RelisterOptions{Runtime: rt, Cache: runtime.NewCache(), Clock: clk,
		Interval: time.Hour, MinKickInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	lists := func() int { rt.mu.Lock(); defer rt.mu.Unlock(); return rt.lists }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	poll(t, "first relist", func() bool { return lists() == 1 })
	poll(t, "the ticker", clk.HasWaiters)
	for want := 2; want <= 3; want++ {
		r.Kick()
		r.Kick() // coalesced with the first
		clk.Step(100 * time.Millisecond)
		poll(t, "kicked relist", func() bool { return lists() == want })
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if n := lists(); n != 3 {
		t.Fatalf("%d relists, want 3 (two kicks of two calls each)", n)
	}
}

// A container created between a relist's listing and its reading of the
// pod's status is in the cached status but not in the listing the next
// relist diffs against. If it is removed before that relist, no listing
// ever changes: the relister must read the pod again by itself, or the
// cache keeps the container running for good.
func TestRelisterRereadsAStatusNewerThanItsListing(t *testing.T) {
	r, rt, cache, rec, clk := newRelister(t)
	ctx := context.Background()
	rt.setPod("a") // the sandbox only
	rt.unlisted = map[types.UID][]*runtime.ContainerStatus{"a": {{ID: runtime.ContainerID{Type: "t", ID: "a-late"}, Name: "c", State: runtime.ContainerStateRunning}}}
	if err := r.ForceRefresh(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := cache.Get("a"); st.FindContainerStatusByName("c") == nil {
		t.Fatalf("cached status %+v, want the late container", st)
	}
	rec.take()
	rt.takeStatusCalls()

	// The container goes before the next listing.
	rt.mu.Lock()
	rt.unlisted = nil
	rt.mu.Unlock()
	clk.Step(time.Second)
	if err := r.ForceRefresh(ctx); err != nil {
		t.Fatal(err)
	}
	if calls := rt.takeStatusCalls(); !slices.Equal(calls, []types.UID{"a"}) {
		t.Fatalf("status reads %v, want a's again", calls)
	}
	if st, _ := cache.Get("a"); st.FindContainerStatusByName("c") != nil {
		t.Fatalf("cached status %+v still names the removed container", st)
	}
	if diff := cmp.Diff([]runtime.PodEvent{{ID: "a", Type: runtime.PodSync}}, rec.take()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// Status and listing agree now: nothing more is read.
	clk.Step(time.Second)
	if err := r.ForceRefresh(ctx); err != nil {
		t.Fatal(err)
	}
	if ev, calls := rec.take(), rt.takeStatusCalls(); len(ev) != 0 || len(calls) != 0 {
		t.Fatalf("settled relist: events %v, status reads %v", ev, calls)
	}
}

// A status stored in the cache by someone else (the agent, right after it
// started a container) may name what no listing showed. Reinspect makes
// the next relist read it again if its listing lacks what the status
// names (and only then: one the listing agrees with costs nothing); the
// pod's worker hears of it only if the read changes what the cache names.
func TestRelisterReinspect(t *testing.T) {
	r, rt, cache, rec, clk := newRelister(t)
	ctx := context.Background()
	rt.setPod("a")
	rt.setPod("b")
	if err := r.ForceRefresh(ctx); err != nil {
		t.Fatal(err)
	}
	rec.take()
	rt.takeStatusCalls()

	// a: the stored status names a container that is gone by the next
	// listing. b: the stored status is what the runtime still lists.
	late := &runtime.ContainerStatus{ID: runtime.ContainerID{Type: "t", ID: "a-late"}, Name: "c", State: runtime.ContainerStateRunning}
	clk.Step(time.Second)
	cache.Set("a", &runtime.PodStatus{ID: "a", Name: "a", Namespace: "ns", ContainerStatuses: []*runtime.ContainerStatus{late}}, nil, clk.Now())
	r.Reinspect("a")
	bStatus, _ := rt.GetPodStatus(ctx, "b", "b", "ns")
	cache.Set("b", bStatus, nil, clk.Now())
	r.Reinspect("b")
	// c: a pod no listing showed, gone before the next one.
	cLate := &runtime.ContainerStatus{ID: runtime.ContainerID{Type: "t", ID: "c-late"}, Name: "c", State: runtime.ContainerStateRunning}
	cache.Set("c", &runtime.PodStatus{ID: "c", Name: "c", Namespace: "ns", ContainerStatuses: []*runtime.ContainerStatus{cLate}}, nil, clk.Now())
	r.Reinspect("c")
	rt.takeStatusCalls()

	clk.Step(time.Second)
	if err := r.ForceRefresh(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]types.UID{"a"}, rt.takeStatusCalls()); diff != "" {
		t.Errorf("status reads (-want +got):\n%s", diff)
	}
	events := rec.take()
	slices.SortFunc(events, func(x, y runtime.PodEvent) int { return strings.Compare(string(x.ID), string(y.ID)) })
	if diff := cmp.Diff([]runtime.PodEvent{{ID: "a", Type: runtime.PodSync}, {ID: "c", Type: runtime.PodSync}}, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	for _, uid := range []types.UID{"a", "c"} {
		if st, _ := cache.Get(uid); st.FindContainerStatusByName("c") != nil {
			t.Fatalf("cached status of %s %+v still names the removed container", uid, st)
		}
	}

	clk.Step(time.Second)
	if err := r.ForceRefresh(ctx); err != nil {
		t.Fatal(err)
	}
	if ev, calls := rec.take(), rt.takeStatusCalls(); len(ev) != 0 || len(calls) != 0 {
		t.Fatalf("settled relist: events %v, status reads %v", ev, calls)
	}
}

// slowRuntime's GetPodStatus of one pod waits until released.
type slowRuntime struct {
	*listRuntime
	slow    types.UID
	reading chan struct{} // closed when the slow read begins
	release chan struct{}
}

func (s *slowRuntime) GetPodStatus(ctx context.Context, uid types.UID, name, ns string) (*runtime.PodStatus, error) {
	if uid == s.slow {
		close(s.reading)
		select {
		case <-s.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.listRuntime.GetPodStatus(ctx, uid, name, ns)
}

// TestRelisterUnchangedPodsFreshBeforeTheReads: once a relist has compared
// its listing with the one before, a worker waiting on a pod whose listing
// did not change gets its status, while the read of a changed pod is still
// in progress; the changed pod's waiter gets the status read.
func TestRelisterUnchangedPodsFreshBeforeTheReads(t *testing.T) {
	rt := &slowRuntime{listRuntime: newListRuntime(), slow: "changed", reading: make(chan struct{}), release: make(chan struct{})}
	cache := runtime.NewCache()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, err := runtime.NewRelister(runtime.RelisterOptions{Runtime: rt, Cache: cache, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rt.setPod("same", runtime.ContainerStateRunning)
	rt.setPod("changed", runtime.ContainerStateRunning)
	close(rt.release) // the first relist reads both at once
	if err := r.ForceRefresh(ctx); err != nil {
		t.Fatal(err)
	}
	rt.reading, rt.release = make(chan struct{}), make(chan struct{})

	clk.Step(time.Second)
	synced := clk.Now() // the workers' last syncs end now
	clk.Step(time.Second)
	rt.setPod("changed", runtime.ContainerStateExited)
	relisted := make(chan error, 1)
	go func() { relisted <- r.ForceRefresh(ctx) }()
	select {
	case <-rt.reading:
	case <-ctx.Done():
		t.Fatal("the changed pod was never read")
	}
	st, err := cache.GetNewerThan(ctx, "same", synced)
	if err != nil {
		t.Fatalf("unchanged pod, while a changed one is read: %v", err)
	}
	if c := st.FindContainerStatusByName("c"); c == nil || c.State != runtime.ContainerStateRunning {
		t.Errorf("unchanged pod's status: %+v", st)
	}
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if _, err := cache.GetNewerThan(short, "changed", synced); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("changed pod before its read: %v, want a wait", err)
	}
	close(rt.release)
	if err := <-relisted; err != nil {
		t.Fatal(err)
	}
	st, err = cache.GetNewerThan(ctx, "changed", synced)
	if c := st.FindContainerStatusByName("c"); err != nil || c == nil || c.State != runtime.ContainerStateExited {
		t.Errorf("changed pod after its read: %+v, %v", st, err)
	}
}

// TestRelisterTrustsAStatusItsListingAgreesWith: a pod whose listing
// changed is not read again when the cache already holds a status naming
// exactly what the listing shows (the agent read it after starting the
// pod): the status is stamped with the listing's time, which wakes the
// pod's worker, and the events are those of the listing. A status that
// disagrees in a state, or names one container fewer, is read.
func TestRelisterTrustsAStatusItsListingAgreesWith(t *testing.T) {
	r, rt, cache, rec, clk := newRelister(t)
	ctx := context.Background()
	if err := r.ForceRefresh(ctx); err != nil { // nothing yet
		t.Fatal(err)
	}
	clk.Step(time.Second)
	statusOf := func(uid types.UID, sandbox runtime.SandboxState, containers ...runtime.ContainerState) *runtime.PodStatus {
		st := &runtime.PodStatus{ID: uid, Name: string(uid), Namespace: "ns",
			SandboxStatuses: []*runtime.SandboxStatus{{ID: string(uid) + "-sb", State: sandbox}}}
		for i, s := range containers {
			st.ContainerStatuses = append(st.ContainerStatuses, &runtime.ContainerStatus{ID: runtime.ContainerID{Type: "t", ID: string(uid) + "-c" + string(rune('0'+i))}, Name: "c", State: s})
		}
		return st
	}
	for _, uid := range []types.UID{"agrees", "other-state", "fewer"} {
		rt.setPod(uid, runtime.ContainerStateRunning, runtime.ContainerStateExited)
	}
	// The agent's reads, after it started them.
	read := clk.Now()
	agrees := statusOf("agrees", runtime.SandboxStateReady, runtime.ContainerStateRunning, runtime.ContainerStateExited)
	cache.Set("agrees", agrees, nil, read)
	cache.Set("other-state", statusOf("other-state", runtime.SandboxStateReady, runtime.ContainerStateRunning, runtime.ContainerStateRunning), nil, read)
	cache.Set("fewer", statusOf("fewer", runtime.SandboxStateReady, runtime.ContainerStateRunning), nil, read)

	clk.Step(time.Second)
	listed := clk.Now()
	if err := r.ForceRefresh(ctx); err != nil {
		t.Fatal(err)
	}
	if calls := rt.takeStatusCalls(); !slices.Equal(calls, []types.UID{"fewer", "other-state"}) {
		t.Errorf("status reads %v, want only the two that disagree with the listing", calls)
	}
	st, err := cache.GetNewerThan(ctx, "agrees", listed.Add(-time.Nanosecond))
	if err != nil || st != agrees {
		t.Errorf("agreeing pod's status: %+v, %v; want the agent's, stamped with the listing's time", st, err)
	}
	if st, _ := cache.Get("other-state"); st.ContainerStatuses[1].State != runtime.ContainerStateExited {
		t.Errorf("disagreeing pod's status %+v, want the one read", st)
	}
	ev := rec.take()
	if n := len(ev); n != 9 { // 3 pods × (a sandbox and two containers)
		t.Errorf("%d events, want every change of the listing (9): %v", n, ev)
	}
}
