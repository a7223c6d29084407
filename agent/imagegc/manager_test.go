package imagegc_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/agent/imagegc"
	"github.com/podlife/podlife/runtime"
)

func img(id string, size int64, tags ...string) runtime.Image {
	return runtime.Image{ID: id, Size: size, RepoTags: tags}
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Above the high threshold, unused images go, least recently used first,
// until the usage is down to the low threshold; images in use, pinned by
// the runtime or named in PinnedImages, and images younger than MinAge
// stay.
func TestGarbageCollectDownToLowThreshold(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(t0)
	rt := newFakeRuntime(
		img("sha256:a", 100, "docker.io/library/a:1"), // never used
		img("sha256:b", 200, "docker.io/library/b:1"), // used until t0
		img("sha256:c", 300, "docker.io/library/c:1"), // in use
		runtime.Image{ID: "sha256:d", Size: 100, Pinned: true},
		img("sha256:e", 50, "registry.k8s.io/pause:3.10"), // the sandbox image, named
		img("sha256:f", 100, "docker.io/library/f:1"),     // used until t0+1m
	)
	rt.use("b", "sha256:b")
	rt.use("c", "sha256:c")
	rt.use("f", "sha256:f")
	// 850 bytes of images and 50 others on 1000: 90 %.
	d := newDisk(rt, 1000, 50)
	reg := prometheus.NewRegistry()
	m, err := imagegc.New(imagegc.Options{Runtime: rt, Stats: d.stats, Clock: clk, Registerer: reg,
		PinnedImages: []string{"registry.k8s.io/pause:3.10"}, Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Detect(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Minute)
	rt.unuse("b")
	// Younger than MinAge (2m): nothing goes, and too little was freed.
	err = m.GarbageCollect(ctx)
	if err == nil || !strings.Contains(err.Error(), "Attempted to free 100 bytes, but only found 0 bytes eligible to free") {
		t.Fatalf("GarbageCollect before MinAge = %v, want the kubelet's not-enough error", err)
	}
	if r := rt.removedIDs(); len(r) != 0 {
		t.Fatalf("removed %v before MinAge", r)
	}
	clk.Step(time.Minute)
	rt.unuse("f")
	// 100 bytes must go: a (never used) first.
	if err := m.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"sha256:a"}, rt.removedIDs()); d != "" {
		t.Errorf("removed (-want +got):\n%s", d)
	}
	// At 80 %: nothing more.
	if err := m.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	// 950 of 1000: 150 must go: b (used longest ago), not f.
	d.other.Store(200)
	if err := m.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"sha256:a", "sha256:b"}, rt.removedIDs()); d != "" {
		t.Errorf("removed (-want +got):\n%s", d)
	}
	// 950 of 1000: 150 must go; only f (100) may.
	d.other.Store(400)
	err = m.GarbageCollect(ctx)
	if err == nil || !strings.Contains(err.Error(), "Attempted to free 150 bytes, but only found 100 bytes eligible to free") {
		t.Fatalf("GarbageCollect with too little to free = %v", err)
	}
	for _, id := range []string{"sha256:c", "sha256:d", "sha256:e"} {
		if !rt.has(id) {
			t.Errorf("%s (in use or pinned) was removed", id)
		}
	}
	if got := testutil.ToFloat64(collected(t, reg, "space")); got != 3 {
		t.Errorf("image_garbage_collected_total{reason=space} = %v, want 3", got)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("metric lint: %v, %v", problems, err)
	}
}

// collected finds the counter of reason in reg.
func collected(t *testing.T, reg *prometheus.Registry, reason string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "kubelet_image_garbage_collected_total" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			if mt.GetLabel()[0].GetValue() == reason {
				return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x", Help: "x"}, mt.GetCounter().GetValue)
			}
		}
	}
	t.Fatalf("no kubelet_image_garbage_collected_total{reason=%q}", reason)
	return nil
}

// DeleteUnusedImages removes every unused, unpinned image older than
// MinAge, whatever the usage, and says how many bytes it freed.
func TestDeleteUnusedImages(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(t0)
	rt := newFakeRuntime(img("sha256:a", 100), img("sha256:b", 200), img("sha256:c", 300),
		runtime.Image{ID: "sha256:p", Size: 7, Pinned: true})
	rt.use("c", "sha256:c")
	m, err := imagegc.New(imagegc.Options{Runtime: rt, Stats: newDisk(rt, 1<<40, 0).stats, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if freed, err := m.DeleteUnusedImages(ctx); freed != 0 || err != nil {
		t.Fatalf("DeleteUnusedImages of new images = %d, %v; want 0, nil", freed, err)
	}
	clk.Step(imagegc.DefaultMinAge)
	rt.refuse["sha256:b"] = errRefused
	freed, err := m.DeleteUnusedImages(ctx)
	if freed != 100 || err == nil || !strings.Contains(err.Error(), "refused by the test") {
		t.Fatalf("DeleteUnusedImages = %d, %v; want 100 and b's refusal", freed, err)
	}
	delete(rt.refuse, "sha256:b")
	if freed, err := m.DeleteUnusedImages(ctx); freed != 200 || err != nil {
		t.Fatalf("DeleteUnusedImages = %d, %v; want 200, nil", freed, err)
	}
	if !rt.has("sha256:c") || !rt.has("sha256:p") {
		t.Error("an image in use or pinned was removed")
	}
}

// MaxAge removes images unused for that long, whatever the usage, once
// the Manager has run MaxAge.
func TestMaxAge(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	rt := newFakeRuntime(img("sha256:old", 10), img("sha256:used", 10))
	rt.use("u", "sha256:used")
	reg := prometheus.NewRegistry()
	m, err := imagegc.New(imagegc.Options{Runtime: rt, Stats: newDisk(rt, 1<<40, 0).stats, Clock: clk,
		MaxAge: time.Hour, Registerer: reg, GCPeriod: 5 * time.Minute, DetectPeriod: 24 * time.Hour, ImageListPeriod: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	step := run(t, m, clk, 5*time.Minute)
	for range 12 { // one hour: not yet
		step()
	}
	if len(rt.removedIDs()) != 0 {
		t.Fatalf("removed %v within MaxAge", rt.removedIDs())
	}
	step()
	if d := cmp.Diff([]string{"sha256:old"}, rt.removedIDs()); d != "" {
		t.Errorf("removed (-want +got):\n%s", d)
	}
	if got := testutil.ToFloat64(collected(t, reg, "age")); got != 1 {
		t.Errorf("image_garbage_collected_total{reason=age} = %v, want 1", got)
	}
}

// A runtime that refuses a removal: the image is tried again at the next
// pass; the failure is logged as the kubelet's (once, then "multiple
// times in a row" with one ImageGCFailed event), not at every pass.
func TestRefusedRemovalRetriedAndLoggedOnce(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	rt := newFakeRuntime(img("sha256:a", 900))
	rt.refuse["sha256:a"] = errRefused
	rec := &recorder{}
	logs := &logLines{t: t}
	m, err := imagegc.New(imagegc.Options{Runtime: rt, Stats: newDisk(rt, 1000, 0).stats, Clock: clk, MinAge: -1,
		Recorder: rec, NodeName: "node-1", Logger: logs.logger(), DetectPeriod: 24 * time.Hour, ImageListPeriod: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	step := run(t, m, clk, imagegc.DefaultGCPeriod)
	for range 6 {
		step()
	}
	if !rt.has("sha256:a") {
		t.Fatal("a removed while the runtime refuses it")
	}
	for _, c := range []struct {
		line string
		n    int
	}{
		{"Removing image to free bytes", 1},
		{"Image garbage collection failed once", 1},
		{"Image garbage collection failed multiple times in a row", 1},
	} {
		if n := logs.count(c.line); n != c.n {
			t.Errorf("%d lines %q in 7 failed passes, want %d", n, c.line, c.n)
		}
	}
	if ev := rec.list(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning ImageGCFailed wanted to free 100 bytes, but freed 0 bytes space with errors in image deletion: remove image sha256:a: refused by the test") {
		t.Errorf("events = %q, want one Warning ImageGCFailed", ev)
	}
	delete(rt.refuse, "sha256:a")
	step()
	if rt.has("sha256:a") {
		t.Error("a still present once the runtime accepts its removal")
	}
	if n := logs.count("Image garbage collection succeeded"); n != 1 {
		t.Errorf("%d recovery lines, want 1", n)
	}
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
