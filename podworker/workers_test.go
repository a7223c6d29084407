package podworker_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/podworker"
	pwt "github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime"
)

const (
	resync  = time.Minute
	backoff = 10 * time.Second
)

type harness struct {
	t     *testing.T
	w     *podworker.Workers
	f     *pwt.FakeSyncer
	clock *testingclock.FakeClock
	stop  func()
}

func newHarness(t *testing.T, mod ...func(*podworker.Options)) *harness {
	t.Helper()
	h := &harness{t: t, f: pwt.NewFakeSyncer(), clock: testingclock.NewFakeClock(time.Unix(1_700_000_000, 0))}
	opts := podworker.Options{
		Syncer:         h.f,
		Clock:          h.clock,
		Logger:         testr.NewWithOptions(t, testr.Options{Verbosity: 4}),
		ResyncInterval: resync,
		BackOffPeriod:  backoff,
		Random:         func() float64 { return 0 },
	}
	for _, m := range mod {
		m(&opts)
	}
	w, err := podworker.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	h.w = w
	return h
}

// run starts the workers; the test's cleanup stops them and checks that no
// two calls for one pod overlapped.
func (h *harness) run() *harness {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.w.Run(ctx) }()
	var once sync.Once
	h.stop = func() { once.Do(func() { h.halt(cancel, done) }) }
	h.t.Cleanup(func() {
		h.stop()
		if o := h.f.Overlaps(); len(o) > 0 {
			h.t.Errorf("overlapping Syncer calls: %v", o)
		}
	})
	return h
}

func (h *harness) halt(cancel func(), done chan error) {
	{
		cancel()
		select {
		case err := <-done:
			if err != nil {
				h.t.Errorf("Run: %v", err)
			}
		case <-time.After(pwt.DefaultTimeout):
			h.t.Errorf("Run did not return after its context ended")
		}
	}
}

func (h *harness) methods(uid types.UID, want ...string) {
	h.t.Helper()
	err := pwt.Poll(0, func() bool {
		if !slices.Equal(h.f.Methods(uid), want) || h.f.InFlight(uid) {
			return false
		}
		info, ok := h.w.PodInfo(uid)
		return !ok || !info.InFlight
	})
	if err != nil {
		h.t.Fatalf("calls for %s (-want +got):\n%s", uid, cmp.Diff(want, h.f.Methods(uid)))
	}
}

func (h *harness) idle() {
	h.t.Helper()
	pwt.WaitFor(h.t, 0, "workers idle", func() bool { return h.w.Busy() == 0 })
}

func (h *harness) lifecycle(uid types.UID, want podworker.Lifecycle) {
	h.t.Helper()
	pwt.WaitFor(h.t, 0, "lifecycle "+want.String(), func() bool {
		info, ok := h.w.PodInfo(uid)
		return ok && info.Lifecycle == want
	})
}

// stepTo advances the fake clock by d once the schedule has armed a timer.
func (h *harness) step(d time.Duration) {
	h.t.Helper()
	pwt.WaitFor(h.t, 0, "a timer armed", h.clock.HasWaiters)
	h.clock.Step(d)
}

func newPod(uid, name string) *v1.Pod {
	gp := int64(30)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &gp,
			Containers:                    []v1.Container{{Name: "c", Image: "img"}},
		},
	}
}

func staticPod(uid, name string) *v1.Pod {
	p := newPod(uid, name)
	p.Annotations = map[string]string{podmanager.ConfigSourceAnnotationKey: podmanager.FileSource}
	return p
}

func create(pod *v1.Pod) podworker.UpdatePodOptions {
	return podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: pod}
}

func kill(pod *v1.Pod, opts *podworker.KillPodOptions) podworker.UpdatePodOptions {
	return podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, Pod: pod, KillPodOptions: opts}
}

func TestLifecycleCreateKillFinish(t *testing.T) {
	h := newHarness(t).run()
	pod := newPod("u1", "web")
	h.w.UpdatePod(create(pod))
	h.methods("u1", "SyncPod")
	h.idle()
	if !h.w.CouldHaveRunningContainers("u1") || h.w.IsPodTerminationRequested("u1") {
		t.Fatal("a synced pod must be running and not terminating")
	}

	done := make(chan struct{})
	h.w.UpdatePod(kill(pod, &podworker.KillPodOptions{CompletedCh: done}))
	if !h.w.IsPodTerminationRequested("u1") {
		t.Fatal("termination must be visible as soon as the kill is accepted")
	}
	h.methods("u1", "SyncPod", "SyncTerminatingPod", "SyncTerminatedPod")
	select {
	case <-done:
	case <-time.After(pwt.DefaultTimeout):
		t.Fatal("CompletedCh not closed")
	}
	h.lifecycle("u1", podworker.LifecycleFinished)
	if info, _ := h.w.PodInfo("u1"); !info.NextAttempt.IsZero() {
		t.Errorf("a finished pod has a next attempt at %v", info.NextAttempt)
	}
	calls := h.f.CallsFor("u1")
	if calls[0].UpdateType != podworker.SyncPodCreate || calls[1].GracePeriod != 30 {
		t.Errorf("calls = %v", calls)
	}
	for name, got := range map[string]bool{
		"IsPodKnownTerminated":             h.w.IsPodKnownTerminated("u1"),
		"ShouldPodBeFinished":              h.w.ShouldPodBeFinished("u1"),
		"ShouldPodRuntimeBeRemoved":        h.w.ShouldPodRuntimeBeRemoved("u1"),
		"ShouldPodContainersBeTerminating": h.w.ShouldPodContainersBeTerminating("u1"),
		"!CouldHaveRunningContainers":      !h.w.CouldHaveRunningContainers("u1"),
		"!ShouldPodContentBeRemoved":       !h.w.ShouldPodContentBeRemoved("u1"),
	} {
		if !got {
			t.Errorf("%s: false for a finished pod", name)
		}
	}

	// A finished pod is a tombstone until SyncKnownPods no longer desires it.
	if got := h.w.SyncKnownPods([]*v1.Pod{pod}); got["u1"].State != podworker.TerminatedPod {
		t.Errorf("SyncKnownPods = %v", got)
	}
	if got := h.w.SyncKnownPods(nil); len(got) != 0 {
		t.Errorf("finished undesired pod not forgotten: %v", got)
	}
	if _, ok := h.w.PodInfo("u1"); ok {
		t.Error("pod still known")
	}
}

func TestNoSyncerCallBeforeRun(t *testing.T) {
	h := newHarness(t)
	h.w.UpdatePod(create(newPod("u1", "web")))
	if n := len(h.f.Calls()); n != 0 {
		t.Fatalf("%d Syncer calls before Run", n)
	}
	if info, _ := h.w.PodInfo("u1"); !info.Working {
		t.Fatal("the update must be pending")
	}
	h.run()
	h.methods("u1", "SyncPod")
}

func TestKillCancelsRunningSyncPod(t *testing.T) {
	h := newHarness(t).run()
	gate := h.f.Block(pwt.SyncPod, "u1")
	pod := newPod("u1", "web")
	h.w.UpdatePod(create(pod))
	<-gate.Entered()
	h.w.UpdatePod(kill(pod, nil))
	h.methods("u1", "SyncPod!", "SyncTerminatingPod", "SyncTerminatedPod")
	if err := h.f.CallsFor("u1")[0].Err; !errors.Is(err, context.Canceled) {
		t.Errorf("SyncPod returned %v, want context.Canceled", err)
	}
}

func TestShorterGraceCancelsTerminatingAndNeverGrows(t *testing.T) {
	h := newHarness(t).run()
	pod := newPod("u1", "web")
	h.w.UpdatePod(create(pod))
	h.methods("u1", "SyncPod")
	gate := h.f.Block(pwt.SyncTerminatingPod, "u1")
	h.w.UpdatePod(kill(pod, nil))
	<-gate.Entered()
	h.w.UpdatePod(kill(pod, &podworker.KillPodOptions{PodTerminationGracePeriodSecondsOverride: ptr(int64(5))}))
	// The cancelled attempt returns; the next one gets 5 and blocks again.
	pwt.WaitFor(t, 0, "second attempt", func() bool { return h.f.Count(pwt.SyncTerminatingPod, "u1") == 2 })
	h.w.UpdatePod(kill(pod, &podworker.KillPodOptions{PodTerminationGracePeriodSecondsOverride: ptr(int64(20))}))
	gate.Release()
	h.lifecycle("u1", podworker.LifecycleFinished)
	var gps []int64
	for _, c := range h.f.CallsFor("u1") {
		if c.Method == pwt.SyncTerminatingPod {
			gps = append(gps, c.GracePeriod)
		}
	}
	if gps[0] != 30 || gps[1] != 5 || slices.Max(gps[1:]) != 5 {
		t.Errorf("grace periods = %v, want 30 then only 5", gps)
	}
	if !errors.Is(h.f.CallsFor("u1")[1].Err, context.Canceled) {
		t.Errorf("first terminating call: %v, want cancelled", h.f.CallsFor("u1")[1].Err)
	}
}

// The library owns its retries: a terminating pod whose Syncer keeps failing
// is retried on its own, with backoff, with no further call from the caller.
// (The seed's stuck-terminating bug: a force-deleted pod whose kill hit CRI
// errors was never retried.)
func TestRetriesWithoutCallerInEveryState(t *testing.T) {
	h := newHarness(t).run()
	pod := newPod("u1", "web")
	boom := errors.New("runtime unavailable")
	h.f.Fail(pwt.SyncPod, "u1", 1, boom)
	h.f.Fail(pwt.SyncTerminatingPod, "u1", 2, boom)
	h.f.Fail(pwt.SyncTerminatedPod, "u1", 1, boom)
	h.w.UpdatePod(create(pod))
	h.methods("u1", "SyncPod!")
	info, _ := h.w.PodInfo("u1")
	if want := h.clock.Now().Add(backoff); !info.NextAttempt.Equal(want) {
		t.Fatalf("next attempt at %v, want %v", info.NextAttempt, want)
	}
	h.step(backoff)
	h.methods("u1", "SyncPod!", "SyncPod")

	force := pod.DeepCopy()
	force.DeletionTimestamp = &metav1.Time{Time: h.clock.Now()}
	force.DeletionGracePeriodSeconds = ptr(int64(0))
	h.w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, Pod: force})
	h.methods("u1", "SyncPod!", "SyncPod", "SyncTerminatingPod!")
	h.step(backoff)
	h.methods("u1", "SyncPod!", "SyncPod", "SyncTerminatingPod!", "SyncTerminatingPod!")
	h.step(backoff)
	h.methods("u1", "SyncPod!", "SyncPod", "SyncTerminatingPod!", "SyncTerminatingPod!", "SyncTerminatingPod", "SyncTerminatedPod!")
	h.step(backoff)
	h.lifecycle("u1", podworker.LifecycleFinished)
	if !h.w.ShouldPodContentBeRemoved("u1") {
		t.Error("a deleted, terminated pod's content should be removable")
	}
	for _, c := range h.f.CallsFor("u1")[2:5] {
		if c.GracePeriod != 1 {
			t.Errorf("force delete must use grace 1, got %d", c.GracePeriod)
		}
	}
}

func TestExponentialBackOffIsCappedAndJittered(t *testing.T) {
	h := newHarness(t, func(o *podworker.Options) {
		o.MaxBackOffPeriod = 35 * time.Second
		o.Random = func() float64 { return 0.5 }
	}).run()
	h.f.Fail(pwt.SyncPod, "u1", 4, errors.New("boom"))
	h.w.UpdatePod(create(newPod("u1", "web")))
	want := []time.Duration{10, 20, 35, 35} // seconds, before jitter
	for i, base := range want {
		h.methods("u1", slices.Repeat([]string{"SyncPod!"}, i+1)...)
		info, _ := h.w.PodInfo("u1")
		d := info.NextAttempt.Sub(h.clock.Now())
		if exp := base * time.Second * 5 / 4; d != exp {
			t.Fatalf("attempt %d: delay %v, want %v", i+1, d, exp)
		}
		h.step(d)
	}
	h.methods("u1", "SyncPod!", "SyncPod!", "SyncPod!", "SyncPod!", "SyncPod")
}

func TestRetryAfterError(t *testing.T) {
	h := newHarness(t).run()
	h.f.Fail(pwt.SyncPod, "u1", 1, podworker.RetryAfter(errors.New("network not ready"), time.Second))
	h.w.UpdatePod(create(newPod("u1", "web")))
	h.methods("u1", "SyncPod!")
	info, _ := h.w.PodInfo("u1")
	if d := info.NextAttempt.Sub(h.clock.Now()); d != time.Second {
		t.Fatalf("delay %v, want 1s", d)
	}
}

func TestResync(t *testing.T) {
	h := newHarness(t).run()
	h.w.UpdatePod(create(newPod("u1", "web")))
	h.methods("u1", "SyncPod")
	h.step(resync)
	h.methods("u1", "SyncPod", "SyncPod")
	if c := h.f.CallsFor("u1")[1]; c.UpdateType != podworker.SyncPodSync {
		t.Errorf("resync update type %v", c.UpdateType)
	}
}

func TestCoalescingKeepsNewestUpdate(t *testing.T) {
	h := newHarness(t).run()
	gate := h.f.Block(pwt.SyncPod, "u1")
	pod := newPod("u1", "web")
	h.w.UpdatePod(create(pod))
	<-gate.Entered()
	for _, img := range []string{"v1", "v2", "v3"} {
		p := pod.DeepCopy()
		p.Spec.Containers[0].Image = img
		h.w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, Pod: p})
	}
	gate.Release()
	h.methods("u1", "SyncPod", "SyncPod")
	c := h.f.CallsFor("u1")[1]
	if c.Pod.Spec.Containers[0].Image != "v3" || c.UpdateType != podworker.SyncPodUpdate {
		t.Errorf("coalesced call = %v with image %s", c, c.Pod.Spec.Containers[0].Image)
	}
}

func TestIsTerminalMovesOn(t *testing.T) {
	h := newHarness(t).run()
	h.f.SetTerminal("u1", true)
	h.w.UpdatePod(create(newPod("u1", "job")))
	h.methods("u1", "SyncPod", "SyncTerminatingPod", "SyncTerminatedPod")
	h.lifecycle("u1", podworker.LifecycleFinished)
}

func TestTerminalOnFirstSight(t *testing.T) {
	h := newHarness(t).run()
	pod := newPod("u1", "done")
	pod.Status.Phase = v1.PodSucceeded
	h.w.UpdatePod(create(pod))
	h.methods("u1", "SyncTerminatedPod")
	h.lifecycle("u1", podworker.LifecycleFinished)
}

func TestTerminalOnFirstSightButStillRunning(t *testing.T) {
	cache := runtime.NewCache()
	h := newHarness(t, func(o *podworker.Options) { o.Cache = cache }).run()
	cache.Set("u1", &runtime.PodStatus{ID: "u1", ContainerStatuses: []*runtime.ContainerStatus{{Name: "c", State: runtime.ContainerStateRunning}}}, nil, h.clock.Now())
	pod := newPod("u1", "done")
	pod.Status.Phase = v1.PodFailed
	h.w.UpdatePod(create(pod))
	pwt.WaitFor(t, 0, "terminating call", func() bool { return h.f.Count(pwt.SyncTerminatingPod, "u1") == 1 })
	cache.Set("u1", &runtime.PodStatus{ID: "u1"}, nil, h.clock.Now().Add(time.Second))
	h.methods("u1", "SyncTerminatingPod", "SyncTerminatedPod")
}

// A pod in a terminal phase is born terminated only on what the cache has
// seen: a cache that has listed nothing yet (the runtime was down when the
// agent started) says nothing of its containers, so the pod terminates
// (the kill finds out what runs); once the runtime was listed, a pod the
// cache does not hold has nothing and is born terminated. Before the fix
// the empty answer of a cache miss counted as "nothing runs", and a pod
// whose containers still ran was reported finished (docs/reliability.md,
// finding 6).
func TestTerminalOnFirstSightBeforeTheFirstListing(t *testing.T) {
	cache := runtime.NewCache()
	h := newHarness(t, func(o *podworker.Options) { o.Cache = cache }).run()
	pod := newPod("u1", "done")
	pod.Status.Phase = v1.PodSucceeded
	h.w.UpdatePod(create(pod))
	if info, _ := h.w.PodInfo("u1"); info.Lifecycle != podworker.LifecycleTerminating {
		t.Fatalf("lifecycle %s before the first listing, want terminating", info.Lifecycle)
	}
	// The kill waits for the runtime to be read; the first listing comes.
	cache.UpdateTime(h.clock.Now().Add(time.Second))
	h.methods("u1", "SyncTerminatingPod", "SyncTerminatedPod")
	h.lifecycle("u1", podworker.LifecycleFinished)

	other := newPod("u2", "done")
	other.Status.Phase = v1.PodFailed
	h.w.UpdatePod(create(other))
	h.methods("u2", "SyncTerminatedPod")
	h.lifecycle("u2", podworker.LifecycleFinished)
}

func TestRuntimeOnlyPods(t *testing.T) {
	h := newHarness(t).run()
	rp := &runtime.Pod{ID: "r1", Name: "ghost", Namespace: "default"}
	h.w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodSync, RunningPod: rp})
	if _, ok := h.w.PodInfo("r1"); ok {
		t.Fatal("a RunningPod without a kill must be ignored")
	}
	h.f.Fail(pwt.SyncTerminatingRuntimePod, "r1", 1, errors.New("boom"))
	h.w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, RunningPod: rp,
		KillPodOptions: &podworker.KillPodOptions{PodTerminationGracePeriodSecondsOverride: ptr(int64(1))}})
	if got := h.w.SyncKnownPods(nil)["r1"]; got != (podworker.PodWorkerSync{State: podworker.TerminatingPod, Orphan: true}) {
		t.Errorf("runtime-only pod reported as %+v", got)
	}
	h.methods("r1", "SyncTerminatingRuntimePod!")
	h.step(backoff)
	h.methods("r1", "SyncTerminatingRuntimePod!", "SyncTerminatingRuntimePod")
	pwt.WaitFor(t, 0, "runtime pod forgotten", func() bool { _, ok := h.w.PodInfo("r1"); return !ok })
}

func TestRuntimeKillOfKnownPodUsesSpec(t *testing.T) {
	h := newHarness(t).run()
	pod := newPod("u1", "web")
	h.w.UpdatePod(create(pod))
	h.methods("u1", "SyncPod")
	h.w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, RunningPod: &runtime.Pod{ID: "u1", Name: "web", Namespace: "default"}})
	h.methods("u1", "SyncPod", "SyncTerminatingPod", "SyncTerminatedPod")
	if c := h.f.CallsFor("u1")[1]; c.Pod != pod {
		t.Error("a runtime kill of a pod with a spec must use the spec")
	}
}

func TestCompletedChClosesInEveryCase(t *testing.T) {
	h := newHarness(t).run()
	pod := newPod("u1", "web")
	closed := func(ch chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	// A CompletedCh on a non-kill update of a running pod closes at once.
	ch1 := make(chan struct{})
	h.w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: pod, KillPodOptions: &podworker.KillPodOptions{CompletedCh: ch1}})
	if !closed(ch1) {
		t.Error("CompletedCh of a non-terminating update not closed at once")
	}
	h.methods("u1", "SyncPod")
	// Two kills: both channels close, the same channel twice does not crash.
	gate := h.f.Block(pwt.SyncTerminatingPod, "u1")
	ch2, ch3 := make(chan struct{}), make(chan struct{})
	h.w.UpdatePod(kill(pod, &podworker.KillPodOptions{CompletedCh: ch2}))
	h.w.UpdatePod(kill(pod, &podworker.KillPodOptions{CompletedCh: ch3}))
	h.w.UpdatePod(kill(pod, &podworker.KillPodOptions{CompletedCh: ch3}))
	<-gate.Entered()
	if closed(ch2) || closed(ch3) {
		t.Fatal("CompletedCh closed before termination")
	}
	gate.Release()
	pwt.WaitFor(t, 0, "both channels closed", func() bool { return closed(ch2) && closed(ch3) })
	h.lifecycle("u1", podworker.LifecycleFinished)
	// Killing a finished pod closes at once.
	ch4 := make(chan struct{})
	h.w.UpdatePod(kill(pod, &podworker.KillPodOptions{CompletedCh: ch4}))
	if !closed(ch4) {
		t.Error("CompletedCh of a finished pod not closed at once")
	}
	// A rejected update closes it too.
	ch5 := make(chan struct{})
	h.w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, KillPodOptions: &podworker.KillPodOptions{CompletedCh: ch5}})
	if !closed(ch5) {
		t.Error("CompletedCh of a rejected update not closed")
	}
}

func TestStaticPodsOneAtATimeAndNextStartsByItself(t *testing.T) {
	h := newHarness(t).run()
	a, b := staticPod("a", "etcd"), staticPod("b", "etcd")
	h.w.UpdatePod(create(a))
	h.methods("a", "SyncPod")
	h.w.UpdatePod(create(b))
	h.idle()
	if n := len(h.f.CallsFor("b")); n != 0 {
		t.Fatalf("second static pod with the same full name ran %d calls", n)
	}
	gate := h.f.Block(pwt.SyncTerminatingPod, "a")
	h.w.UpdatePod(kill(a, nil))
	<-gate.Entered()
	if !h.w.IsPodForMirrorPodTerminatingByFullName("etcd_default") {
		t.Error("the full name's pod is terminating")
	}
	gate.Release()
	h.methods("a", "SyncPod", "SyncTerminatingPod", "SyncTerminatedPod")
	// b starts by itself once a has finished: no further UpdatePod.
	h.methods("b", "SyncPod")
	if h.w.IsPodForMirrorPodTerminatingByFullName("etcd_default") {
		t.Error("b is not terminating")
	}
	if got := h.w.SyncKnownPods([]*v1.Pod{b}); !got["b"].Static || got["b"].State != podworker.SyncPod {
		t.Errorf("SyncKnownPods = %+v", got)
	}
}

func TestWaitingStaticPodKilledFinishesWithoutCalls(t *testing.T) {
	h := newHarness(t).run()
	a, b, c := staticPod("a", "etcd"), staticPod("b", "etcd"), staticPod("c", "etcd")
	h.w.UpdatePod(create(a))
	h.methods("a", "SyncPod")
	h.w.UpdatePod(create(b))
	h.w.UpdatePod(create(c))
	done := make(chan struct{})
	h.w.UpdatePod(kill(b, &podworker.KillPodOptions{CompletedCh: done}))
	<-done
	h.lifecycle("b", podworker.LifecycleFinished)
	h.w.UpdatePod(kill(a, nil))
	h.methods("c", "SyncPod")
	if n := len(h.f.CallsFor("b")); n != 0 {
		t.Errorf("killed waiting static pod got %d calls", n)
	}
}

func TestUIDReuseRestartsAfterFinish(t *testing.T) {
	h := newHarness(t).run()
	pod := staticPod("u1", "web")
	h.w.UpdatePod(create(pod))
	h.methods("u1", "SyncPod")
	gate := h.f.Block(pwt.SyncTerminatingPod, "u1")
	h.w.UpdatePod(kill(pod, nil))
	<-gate.Entered()
	h.w.UpdatePod(create(pod)) // recreated while terminating
	if info, _ := h.w.PodInfo("u1"); !info.RestartRequested {
		t.Fatal("restart not requested")
	}
	gate.Release()
	h.lifecycle("u1", podworker.LifecycleFinished)
	// Housekeeping: the finished, restart-requested pod is forgotten even
	// though it is desired, so the caller can create it again.
	if got := h.w.SyncKnownPods([]*v1.Pod{pod}); len(got) != 0 {
		t.Fatalf("SyncKnownPods = %v, want the pod forgotten", got)
	}
	h.w.UpdatePod(create(pod))
	h.methods("u1", "SyncPod", "SyncTerminatingPod", "SyncTerminatedPod", "SyncPod")
}

func TestSyncKnownPodsDrivesOrphans(t *testing.T) {
	h := newHarness(t)
	running, unstarted := newPod("run", "a"), newPod("new", "b")
	running.Spec.TerminationGracePeriodSeconds = ptr(int64(7))
	h.w.UpdatePod(create(running))
	h.run()
	h.methods("run", "SyncPod")
	h.stop()

	// Not running: an unstarted, undesired pod is forgotten without calls.
	h2 := newHarness(t)
	h2.w.UpdatePod(create(unstarted))
	if got := h2.w.SyncKnownPods(nil); len(got) != 0 {
		t.Fatalf("unstarted orphan kept: %v", got)
	}
	h2.run()
	h2.idle()
	if n := len(h2.f.Calls()); n != 0 {
		t.Fatalf("%d calls for a forgotten pod", n)
	}

	h3 := newHarness(t).run()
	h3.w.UpdatePod(create(running))
	h3.methods("run", "SyncPod")
	got := h3.w.SyncKnownPods(nil)
	want := podworker.PodWorkerSync{State: podworker.TerminatingPod, Orphan: true, HasConfig: true}
	if got["run"] != want {
		t.Errorf("orphan reported as %+v, want %+v", got["run"], want)
	}
	h3.methods("run", "SyncPod", "SyncTerminatingPod", "SyncTerminatedPod")
	if gp := h3.f.CallsFor("run")[1].GracePeriod; gp != 7 {
		t.Errorf("orphan terminated with grace %d, want the spec's 7", gp)
	}
	h3.lifecycle("run", podworker.LifecycleFinished)
	if got := h3.w.SyncKnownPods(nil); len(got) != 0 {
		t.Errorf("finished orphan kept: %v", got)
	}
}

func TestUnknownPodAnswers(t *testing.T) {
	h := newHarness(t)
	type answers struct{ known, could, finished, requested, containersTerm, runtimeRm, contentRm bool }
	ask := func() answers {
		u := types.UID("nobody")
		return answers{h.w.IsPodKnownTerminated(u), h.w.CouldHaveRunningContainers(u), h.w.ShouldPodBeFinished(u),
			h.w.IsPodTerminationRequested(u), h.w.ShouldPodContainersBeTerminating(u), h.w.ShouldPodRuntimeBeRemoved(u), h.w.ShouldPodContentBeRemoved(u)}
	}
	if got, want := ask(), (answers{could: true}); got != want {
		t.Errorf("before SyncKnownPods: %+v, want %+v", got, want)
	}
	h.w.SyncKnownPods(nil)
	if got, want := ask(), (answers{finished: true, containersTerm: true, runtimeRm: true, contentRm: true}); got != want {
		t.Errorf("after SyncKnownPods: %+v, want %+v", got, want)
	}
}

func TestRunStopsInFlightSyncs(t *testing.T) {
	h := newHarness(t).run()
	h.f.Block(pwt.SyncPod, "")
	for _, uid := range []string{"a", "b", "c"} {
		h.w.UpdatePod(create(newPod(uid, uid)))
	}
	pwt.WaitFor(t, 0, "three syncs in flight", func() bool { return h.f.InFlight("a") && h.f.InFlight("b") && h.f.InFlight("c") })
	h.stop()
	for _, c := range h.f.Calls() {
		if !errors.Is(c.Err, context.Canceled) {
			t.Errorf("%v: want cancelled", c)
		}
	}
	if n := h.w.Busy(); n != 0 {
		t.Errorf("%d pod loops still running after Run returned", n)
	}
}

func TestBadInput(t *testing.T) {
	if _, err := podworker.New(podworker.Options{}); err == nil {
		t.Error("New without Syncer: want error")
	}
	if _, err := podworker.New(podworker.Options{Syncer: pwt.NewFakeSyncer(), ResyncInterval: -1}); err == nil {
		t.Error("New with negative ResyncInterval: want error")
	}
	h := newHarness(t).run()
	h.w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate})
	h.w.UpdatePod(create(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "no-uid"}}))
	if n := h.w.Len(); n != 0 {
		t.Errorf("%d pods known after bad updates", n)
	}
}

func TestSyncerPanicIsRetried(t *testing.T) {
	h := newHarness(t).run()
	n := 0
	h.f.SetHook(pwt.SyncPod, "u1", func(context.Context, pwt.Call) (bool, error) {
		n++
		if n == 1 {
			panic("bad syncer")
		}
		return false, nil
	})
	h.w.UpdatePod(create(newPod("u1", "web")))
	h.methods("u1", "SyncPod!")
	h.step(backoff)
	h.methods("u1", "SyncPod!", "SyncPod")
}

func TestCacheWaitsForNewerStatus(t *testing.T) {
	cache := runtime.NewCache()
	h := newHarness(t, func(o *podworker.Options) {
		o.Cache = cache
		o.StatusWaitTimeout = 5 * time.Second
	}).run()
	h.w.UpdatePod(create(newPod("u1", "web")))
	// The first sync waits for the first relist.
	pwt.WaitFor(t, 0, "sync waiting for status", func() bool { info, _ := h.w.PodInfo("u1"); return info.InFlight })
	if n := len(h.f.Calls()); n != 0 {
		t.Fatalf("%d Syncer calls before the cache had a status", n)
	}
	cache.UpdateTime(h.clock.Now())
	h.methods("u1", "SyncPod")
	// The resync waits for a status newer than the first sync's end; none
	// comes, and the bounded wait fails the attempt without a Syncer call.
	h.step(resync)
	pwt.WaitFor(t, 0, "status wait armed", func() bool { info, _ := h.w.PodInfo("u1"); return info.InFlight })
	h.step(5 * time.Second)
	pwt.WaitFor(t, 0, "a failed attempt", func() bool { info, _ := h.w.PodInfo("u1"); return info.Failures == 1 && !info.InFlight })
	h.methods("u1", "SyncPod")
	// A fresh status lets the retry through.
	cache.Set("u1", &runtime.PodStatus{ID: "u1"}, nil, h.clock.Now().Add(time.Millisecond))
	h.step(backoff)
	h.methods("u1", "SyncPod", "SyncPod")
}

func ptr[T any](v T) *T { return &v }

// Regression: with the real clock the schedule loop used to spin re-arming
// its timer and only noticed Run's context at the next deadline (a minute
// away), so Run did not return.
func TestRunReturnsPromptlyWithRealClock(t *testing.T) {
	f := pwt.NewFakeSyncer()
	w, err := podworker.New(podworker.Options{Syncer: f})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	w.UpdatePod(create(newPod("u1", "web")))
	pwt.WaitFor(t, 0, "resync scheduled", func() bool {
		info, _ := w.PodInfo("u1")
		return !info.NextAttempt.IsZero()
	})
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of its context ending")
	}
}

type recordedMetrics struct {
	mu         sync.Mutex
	durations  map[string][]time.Duration
	containers []int
}

func (r *recordedMetrics) ObservePodWorkerDuration(op string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.durations == nil {
		r.durations = map[string][]time.Duration{}
	}
	r.durations[op] = append(r.durations[op], d)
}

func (r *recordedMetrics) ObserveContainersPerPod(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.containers = append(r.containers, n)
}

func TestMetricsObservations(t *testing.T) {
	rec := &recordedMetrics{}
	h := newHarness(t, func(o *podworker.Options) { o.Metrics = rec }).run()
	pod := newPod("u1", "web")
	pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "side", Image: "img"})
	start := h.clock.Now()
	h.clock.Step(3 * time.Second)
	h.w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: pod, StartTime: start})
	h.methods("u1", "SyncPod")
	h.w.UpdatePod(kill(pod, nil)) // no StartTime: no kill observation
	h.lifecycle("u1", podworker.LifecycleFinished)
	// The finish is observed just after the pod's state says finished.
	pwt.WaitFor(t, 0, "terminated observed", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.durations["terminated"]) > 0
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if got := rec.durations["create"]; len(got) != 1 || got[0] != 3*time.Second {
		t.Errorf("create durations = %v, want [3s]", got)
	}
	if got := rec.durations["kill"]; len(got) != 0 {
		t.Errorf("kill without StartTime observed: %v", got)
	}
	if got := rec.durations["terminated"]; len(got) != 1 {
		t.Errorf("terminated durations = %v, want one", got)
	}
	if diff := cmp.Diff([]int{2}, rec.containers); diff != "" {
		t.Errorf("containers per pod (-want +got):\n%s", diff)
	}
}

// An update with a spec states the current mirror pod: nil means the mirror
// is gone (deleted in the API), and SyncPod must see that to recreate it.
// Replays (resyncs) keep the last one.
func TestMirrorPodFollowsUpdates(t *testing.T) {
	h := newHarness(t).run()
	pod := staticPod("s1", "etcd")
	mirror := pod.DeepCopy()
	mirror.UID = "m1"
	h.w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: pod, MirrorPod: mirror})
	h.methods("s1", "SyncPod")
	h.w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, Pod: pod})
	h.methods("s1", "SyncPod", "SyncPod")
	h.step(resync)
	h.methods("s1", "SyncPod", "SyncPod", "SyncPod")
	calls := h.f.CallsFor("s1")
	uidOf := func(p *v1.Pod) string {
		if p == nil {
			return "nil"
		}
		return string(p.UID)
	}
	if got := []string{uidOf(calls[0].MirrorPod), uidOf(calls[1].MirrorPod), uidOf(calls[2].MirrorPod)}; !slices.Equal(got, []string{"m1", "nil", "nil"}) {
		t.Errorf("mirror pods seen: %v; want [m1 nil nil]", got)
	}
	h.w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, Pod: pod, MirrorPod: mirror})
	h.methods("s1", "SyncPod", "SyncPod", "SyncPod", "SyncPod")
	h.step(resync)
	h.methods("s1", "SyncPod", "SyncPod", "SyncPod", "SyncPod", "SyncPod")
	if c := h.f.CallsFor("s1")[4]; c.MirrorPod != mirror {
		t.Errorf("a resync lost the mirror pod: %s", uidOf(c.MirrorPod))
	}
}
