package gc_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/podlife/podlife/agent/gc"
	"github.com/podlife/podlife/runtime/fakecri"
)

func newManager(t testing.TB, w *world, mutate ...func(*gc.Options)) *gc.Manager {
	t.Helper()
	o := gc.Options{Runtime: w.rt, Pods: w.pods, Clock: w.clock, Logger: w.logs.logger()}
	for _, m := range mutate {
		m(&o)
	}
	m, err := gc.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func collect(t testing.TB, w *world, m *gc.Manager) gc.Result {
	t.Helper()
	res, err := m.GarbageCollect(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The kubelet's policy, on a node with a live pod, a terminating one, a
// finished pod still in the API, a deleted one and one no worker knows.
func TestGarbageCollectPolicy(t *testing.T) {
	w := newWorld(t)
	// Live: container "a" restarted twice (attempts 0, 1 dead; 2 runs),
	// "b" dead once, an old dead sandbox and the ready one.
	w.pods.set("live", running)
	oldSB := w.sandbox("live", 0)
	w.stop(oldSB)
	sb := w.sandbox("live", 1)
	a0 := w.container(sb, "live", "a", 0, false)
	a1 := w.container(sb, "live", "a", 1, false)
	a2 := w.container(sb, "live", "a", 2, true)
	b0 := w.container(sb, "live", "b", 0, false)
	// Terminating: nothing of it goes, not even beyond the policy.
	w.pods.set("term", terminating)
	tsb := w.sandbox("term", 0)
	t0 := w.container(tsb, "term", "c", 0, false)
	t1 := w.container(tsb, "term", "c", 1, false)
	w.stop(tsb)
	// Finished, not deleted: keeps its newest dead instance and sandbox.
	w.pods.set("done", terminated)
	dsb := w.sandbox("done", 0)
	d0 := w.container(dsb, "done", "c", 0, false)
	w.stop(dsb)
	// Deleted, and unknown: everything goes.
	w.pods.set("gone", deletedTerminated)
	gsb := w.sandbox("gone", 0)
	g0 := w.container(gsb, "gone", "c", 0, false)
	w.stop(gsb)
	usb := w.sandbox("unknown", 0)
	u0 := w.container(usb, "unknown", "c", 0, false)
	w.stop(usb)

	m := newManager(t, w)
	res := collect(t, w, m)
	left := w.ids()
	for id, want := range map[string]bool{
		oldSB: false, sb: true, a0: false, a1: true, a2: true, b0: true,
		tsb: true, t0: true, t1: true,
		dsb: true, d0: true,
		gsb: false, g0: false, usb: false, u0: false,
	} {
		if left[id] != want {
			t.Errorf("object %s: present %v, want %v", id, left[id], want)
		}
	}
	if res.Containers != 3 || res.Sandboxes != 3 || res.Failed != 0 {
		t.Errorf("result %+v, want 3 containers and 3 sandboxes removed", res)
	}
	// A second pass finds nothing more.
	if res := collect(t, w, m); res.Containers+res.Sandboxes+res.Failed != 0 {
		t.Errorf("second pass: %+v", res)
	}
}

// Until the sources are ready, nothing of a pod the workers do not know
// goes (it may be a pod not yet delivered).
func TestSourcesNotReady(t *testing.T) {
	w := newWorld(t)
	sb := w.sandbox("unknown", 0)
	c := w.container(sb, "unknown", "c", 0, false)
	w.stop(sb)
	ready := false
	m := newManager(t, w, func(o *gc.Options) { o.SourcesReady = func() bool { return ready } })
	if res := collect(t, w, m); res.SourcesReady || res.Containers != 0 || !w.ids()[c] {
		t.Fatalf("sources not ready: %+v, container present %v", res, w.ids()[c])
	}
	ready = true
	if res := collect(t, w, m); !res.SourcesReady || res.Containers != 1 || res.Sandboxes != 1 {
		t.Fatalf("sources ready: %+v", res)
	}
}

// MinAge keeps young dead containers of live pods; MaxContainers caps
// the node, at least one instance per container.
func TestMinAgeAndMaxContainers(t *testing.T) {
	w := newWorld(t)
	w.pods.set("p", running)
	sb := w.sandbox("p", 0)
	var ids []string
	for i := range 4 {
		ids = append(ids, w.container(sb, "p", "a", uint32(i), false))
	}
	q := w.container(sb, "p", "q", 0, false)
	m := newManager(t, w, func(o *gc.Options) {
		o.Policy = gc.Policy{MinAge: time.Hour, MaxPerPodContainer: -1, MaxContainers: 2}
	})
	if res := collect(t, w, m); res.Containers != 0 {
		t.Fatalf("young containers removed: %+v", res)
	}
	w.clock.Step(2 * time.Hour)
	if res := collect(t, w, m); res.Containers != 3 {
		t.Fatalf("removed %d, want 3 (2 kept: one per container)", res.Containers)
	}
	left := w.ids()
	if !left[ids[3]] || !left[q] || left[ids[0]] || left[ids[1]] || left[ids[2]] {
		t.Fatalf("kept %v, want the newest a and q", left)
	}
}

// A runtime that refuses removals: each object is logged once, counted,
// tried again at the next pass and removed once the runtime accepts.
func TestRefusedRemovalIsRetriedAndLoggedOnce(t *testing.T) {
	w := newWorld(t)
	sb := w.sandbox("gone", 0)
	c1 := w.container(sb, "gone", "c", 0, false)
	c2 := w.container(sb, "gone", "d", 0, false)
	w.stop(sb)
	remove := w.srv.Inject(fakecri.Fault{Method: "RemoveContainer", Code: codes.Internal})
	m := newManager(t, w)
	for i := range 5 {
		res := collect(t, w, m)
		if res.Containers != 0 || res.Failed != 2 || res.Sandboxes != 0 {
			t.Fatalf("pass %d: %+v, want 2 failed removals and the sandbox kept", i, res)
		}
	}
	if n := w.logs.count(`"msg"="container garbage collection could not remove an object`); n != 2 {
		t.Fatalf("%d error lines for 2 objects refused 5 times, want 2", n)
	}
	remove()
	res := collect(t, w, m)
	if res.Containers != 2 || res.Sandboxes != 1 || res.Failed != 0 {
		t.Fatalf("after the runtime recovered: %+v", res)
	}
	if left := w.ids(); left[c1] || left[c2] || left[sb] {
		t.Fatalf("left: %v", left)
	}
	if n := w.logs.count("removed an object that failed before"); n != 2 {
		t.Fatalf("%d recovery lines, want 2", n)
	}
}

// A listing that fails ends the pass, logged once in a row.
func TestListingFailureLoggedOnce(t *testing.T) {
	w := newWorld(t)
	remove := w.srv.Inject(fakecri.Fault{Method: "ListContainers", Code: codes.Unavailable})
	var events int
	m := newManager(t, w, func(o *gc.Options) { o.OnListFailure = func(error) { events++ } })
	for range 3 {
		if _, err := m.GarbageCollect(w.ctx); err == nil {
			t.Fatal("no error for a failed listing")
		}
	}
	if events != 1 {
		t.Fatalf("OnListFailure called %d times for 3 failures in a row, want 1", events)
	}
	if n := w.logs.count(`"msg"="container garbage collection failed"`); n != 1 {
		t.Fatalf("%d error lines, want 1", n)
	}
	remove()
	collect(t, w, m)
	if n := w.logs.count("listing the runtime works again"); n != 1 {
		t.Fatalf("%d recovery lines, want 1", n)
	}
}

// Run passes at once and every Period; a clock set back or far forward
// breaks nothing.
func TestRunAndClockJumps(t *testing.T) {
	w := newWorld(t)
	m := newManager(t, w, func(o *gc.Options) { o.Policy.MinAge = time.Minute })
	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	waitFor(t, func() bool { return m.Passes() >= 1 && w.clock.HasWaiters() })
	w.pods.set("p", running)
	sb := w.sandbox("p", 0)
	old := w.container(sb, "p", "a", 0, false)
	w.container(sb, "p", "a", 1, false)
	// Back a day: the dead containers look created in the future. (The
	// fake ticker waits for the clock to come back; a pass by hand.)
	w.clock.SetTime(w.clock.Now().Add(-24 * time.Hour))
	collect(t, w, m)
	if !w.ids()[old] {
		t.Fatal("a container younger than MinAge (on a clock set back) was removed")
	}
	// Forward a year: they are old enough now.
	w.clock.SetTime(w.clock.Now().Add(365 * 24 * time.Hour))
	w.clock.Step(gc.DefaultPeriod)
	waitFor(t, func() bool { return m.Passes() >= 3 && !w.ids()[old] })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := m.Run(w.ctx); err == nil {
		t.Fatal("a second Run was accepted")
	}
}

func TestOptionsValidation(t *testing.T) {
	w := newWorld(t)
	for _, o := range []gc.Options{
		{Pods: w.pods},
		{Runtime: w.rt},
		{Runtime: w.rt, Pods: w.pods, Policy: gc.Policy{MinAge: -1}},
		{Runtime: w.rt, Pods: w.pods, Period: -1},
		{Runtime: w.rt, Pods: w.pods, PodFolderRoots: []string{"relative"}},
	} {
		if _, err := gc.New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

// waitFor polls cond with a deadline.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 20s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}
