package imagegc_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"google.golang.org/grpc/codes"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/agent/imagegc"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// A runtime without ImageFsInfo: the periodic collection is off, said
// once, with no error lines nor events; it comes back when the runtime
// answers; DeleteUnusedImages works all along.
func TestImageFsInfoUnsupported(t *testing.T) {
	rt, remove := withoutImageFsInfo(t, "a:1", "b:1")
	clk := clocktesting.NewFakeClock(t0)
	rec := &recorder{}
	logs := &logLines{t: t}
	m, err := imagegc.New(imagegc.Options{Runtime: rt, Clock: clk, Recorder: rec, NodeName: "n",
		Logger: logs.logger(), DetectPeriod: 24 * time.Hour, ImageListPeriod: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	step := run(t, m, clk, imagegc.DefaultGCPeriod)
	for range 5 {
		step()
	}
	if n := logs.count("Image garbage collection is off"); n != 1 {
		t.Errorf("%d lines saying the collection is off, want 1", n)
	}
	if n := logs.count("failed"); n != 0 || len(rec.list()) != 0 {
		t.Errorf("%d failure lines and events %q for an unsupported ImageFsInfo, want none", n, rec.list())
	}
	freed, err := m.DeleteUnusedImages(context.Background())
	if err != nil || freed != 2<<20 {
		t.Errorf("DeleteUnusedImages = %d, %v; want both images (2 MiB)", freed, err)
	}
	remove()
	step()
	if n := logs.count("Image garbage collection is on again"); n != 1 {
		t.Errorf("%d lines saying the collection is on again, want 1", n)
	}
}

// The stats come back while the disk is over the threshold with nothing
// left to remove: the collection is said to be on again, and that pass's
// failure is logged as a failure. The host's disk (statfs of fakecri's
// mount point) is over the 2% threshold on any machine that runs tests.
func TestImageFsInfoBackOnAFullDisk(t *testing.T) {
	rt, remove := withoutImageFsInfo(t, "a:1")
	clk := clocktesting.NewFakeClock(t0)
	logs := &logLines{t: t}
	m, err := imagegc.New(imagegc.Options{Runtime: rt, Clock: clk, Recorder: &recorder{}, NodeName: "n",
		Logger: logs.logger(), DetectPeriod: 24 * time.Hour, ImageListPeriod: 24 * time.Hour,
		HighThresholdPercent: 2, LowThresholdPercent: 1})
	if err != nil {
		t.Fatal(err)
	}
	step := run(t, m, clk, imagegc.DefaultGCPeriod)
	step()
	if _, err := m.DeleteUnusedImages(context.Background()); err != nil {
		t.Fatal(err)
	}
	remove()
	step()
	if n := logs.count("Image garbage collection is on again"); n != 1 {
		t.Errorf("%d lines saying the collection is on again, want 1", n)
	}
	if n := logs.count("failed once"); n != 1 {
		t.Errorf("%d lines saying the collection failed once, want 1 (the disk over 2%%, nothing to remove)", n)
	}
}

// withoutImageFsInfo returns a CRI runtime over a fakecri holding images
// whose ImageFsInfo answers Unimplemented until remove is called.
func withoutImageFsInfo(t *testing.T, images ...string) (rt *cri.Runtime, remove func()) {
	t.Helper()
	srv := fakecri.New(fakecri.Options{Images: images})
	if err := srv.StartInMemory(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	remove = srv.Inject(fakecri.Fault{Method: "ImageFsInfo", Code: codes.Unimplemented})
	rt, err := cri.New(cri.Options{Endpoint: "fake", Dialer: srv.DialContext})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt, remove
}

// Nonsense stats remove nothing: a capacity of 0 (InvalidDiskCapacity,
// once per row), available above capacity (no usage), huge values (no
// overflow).
func TestNonsenseStats(t *testing.T) {
	for _, tc := range []struct {
		name   string
		st     imagegc.FsStats
		err    string
		events int
	}{
		{"zero capacity", imagegc.FsStats{CapacityBytes: 0, AvailableBytes: 0}, "invalid capacity 0 on image filesystem", 1},
		{"available over capacity", imagegc.FsStats{CapacityBytes: 100, AvailableBytes: 1000}, "", 0},
		{"huge and free", imagegc.FsStats{CapacityBytes: math.MaxUint64, AvailableBytes: math.MaxUint64 / 2}, "", 0},
		{"stats error", imagegc.FsStats{}, "disk on fire", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			rt := newFakeRuntime(img("sha256:a", 100))
			rec := &recorder{}
			stats := func(context.Context) (imagegc.FsStats, error) {
				if tc.name == "stats error" {
					return imagegc.FsStats{}, errors.New("disk on fire")
				}
				return tc.st, nil
			}
			m, err := imagegc.New(imagegc.Options{Runtime: rt, Stats: stats, Clock: clk, MinAge: -1,
				Recorder: rec, NodeName: "n", Logger: testr.New(t)})
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				err := m.GarbageCollect(context.Background())
				if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
					t.Fatalf("GarbageCollect = %v, want %q", err, tc.err)
				}
				clk.Step(time.Hour)
			}
			if len(rt.removedIDs()) != 0 {
				t.Errorf("removed %v on nonsense stats", rt.removedIDs())
			}
			if ev := rec.list(); len(ev) != tc.events || (tc.events > 0 && !strings.HasPrefix(ev[0], "Warning InvalidDiskCapacity ")) {
				t.Errorf("events = %q, want %d InvalidDiskCapacity", ev, tc.events)
			}
		})
	}
}

// The clock jumps back an hour, then forward a day: no crash, nothing in
// use removed, and images seen "in the future" wait MinAge again.
func TestClockJump(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(t0)
	rt := newFakeRuntime(img("sha256:a", 600), img("sha256:b", 300))
	rt.use("b", "sha256:b")
	m, err := imagegc.New(imagegc.Options{Runtime: rt, Stats: newDisk(rt, 1000, 0).stats, Clock: clk, MaxAge: 3 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	_ = m.Detect(ctx)
	clk.SetTime(t0.Add(-time.Hour))
	if err := m.GarbageCollect(ctx); err == nil || !strings.Contains(err.Error(), "only found 0 bytes") {
		t.Fatalf("GarbageCollect after a jump back = %v, want nothing eligible (a first seen now)", err)
	}
	clk.SetTime(t0.Add(-time.Hour + imagegc.DefaultMinAge))
	if err := m.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	if rt.has("sha256:a") || !rt.has("sha256:b") {
		t.Errorf("after MinAge: a present %v (want removed), b present %v (want kept)", rt.has("sha256:a"), rt.has("sha256:b"))
	}
	clk.SetTime(t0.Add(24 * time.Hour))
	if err := m.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	if !rt.has("sha256:b") {
		t.Error("b, in use, removed after a jump forward")
	}
}

// Property: whatever the images, containers, stats and times, a pass
// never removes an image in use or pinned, nor one younger than MinAge.
func TestNeverRemovesUsedPinnedOrYoung(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		clk := clocktesting.NewFakeClock(t0)
		rt := newFakeRuntime()
		protected := map[string]bool{}
		firstSeen := map[string]time.Time{}
		add := func() {
			id := fmt.Sprintf("sha256:%d-%d", seed, r.IntN(1000))
			if _, ok := rt.images[id]; ok {
				return
			}
			im := img(id, r.Int64N(500), "docker.io/library/x"+id[7:]+":1")
			switch r.IntN(4) {
			case 0:
				im.Pinned = true
				protected[id] = true
			case 1:
				rt.use("c"+id, id)
				protected[id] = true
			}
			rt.images[id] = im
			firstSeen[id] = clk.Now()
		}
		for range 5 + r.IntN(20) {
			add()
		}
		d := newDisk(rt, uint64(1+r.IntN(10000)), uint64(r.IntN(5000)))
		m, err := imagegc.New(imagegc.Options{Runtime: rt, Stats: d.stats, Clock: clk, MaxAge: time.Duration(r.IntN(3)) * 10 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for range 10 {
			_ = m.Detect(ctx)
			if r.IntN(3) == 0 {
				add()
			}
			step := time.Duration(r.IntN(300)) * time.Second
			if r.IntN(10) == 0 {
				step = -step
			}
			clk.SetTime(clk.Now().Add(step))
			// After a jump back, age counts from now (as the Manager does).
			for id, at := range firstSeen {
				if at.After(clk.Now()) {
					firstSeen[id] = clk.Now()
				}
			}
			before := clk.Now()
			done := len(rt.removedIDs())
			if r.IntN(4) == 0 {
				_, _ = m.DeleteUnusedImages(ctx)
			} else {
				_ = m.GarbageCollect(ctx)
			}
			for _, id := range rt.removedIDs()[done:] {
				if protected[id] {
					t.Fatalf("seed %d: removed %s, in use or pinned", seed, id)
				}
				if before.Sub(firstSeen[id]) < imagegc.DefaultMinAge {
					t.Fatalf("seed %d: removed %s, first seen %s before", seed, id, before.Sub(firstSeen[id]))
				}
			}
		}
	}
}

// The CRI adapter is what image garbage collection needs.
var (
	_ imagegc.Runtime       = (*cri.Runtime)(nil)
	_ imagegc.FsInfoRuntime = (*cri.Runtime)(nil)
)

// A disk that stays full with nothing removable: each warning event once
// in the row of failed passes (FreeDiskSpaceFailed, then ImageGCFailed),
// not alternating at every pass; after a successful pass, a new row warns
// again.
func TestWarningEventsOncePerRow(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	rt := newFakeRuntime(img("sha256:a", 900))
	rt.use("a", "sha256:a")
	d := newDisk(rt, 1000, 0)
	rec := &recorder{}
	m, err := imagegc.New(imagegc.Options{Runtime: rt, Stats: d.stats, Clock: clk, Recorder: rec, NodeName: "n",
		Logger: testr.New(t), DetectPeriod: 24 * time.Hour, ImageListPeriod: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	step := run(t, m, clk, imagegc.DefaultGCPeriod)
	for range 6 {
		step()
	}
	reasons := func() []string {
		var out []string
		for _, e := range rec.list() {
			out = append(out, strings.Fields(e)[1])
		}
		return out
	}
	if got, want := reasons(), []string{"FreeDiskSpaceFailed", "ImageGCFailed"}; !slices.Equal(got, want) {
		t.Fatalf("events in 7 failed passes: %q, want %q", got, want)
	}
	d.capacity.Store(10000) // room again: the row ends
	step()
	d.capacity.Store(1000)
	step()
	if got, want := reasons(), []string{"FreeDiskSpaceFailed", "ImageGCFailed", "FreeDiskSpaceFailed"}; !slices.Equal(got, want) {
		t.Errorf("events after a success and a new failure: %q, want %q", got, want)
	}
}

// As the kubelet: the images alone are listed every ImageListPeriod (30 s,
// for the Node's status), every container only at each detection
// (DetectPeriod, 5 min) and collection. Listing every container every 30 s
// cost seconds of each half-minute at 100,000 pods.
func TestImageListRefreshListsNoContainers(t *testing.T) {
	srv := fakecri.New(fakecri.Options{Images: []string{"a:1", "b:1"}})
	if err := srv.StartInMemory(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	rt, err := cri.New(cri.Options{Endpoint: "fake", Dialer: srv.DialContext})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	clk := clocktesting.NewFakeClock(t0)
	m, err := imagegc.New(imagegc.Options{Runtime: rt, Clock: clk, Logger: testr.New(t), GCPeriod: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "Run's first detection and collection", func() bool { return m.Passes() >= 2 })
	images, containers := srv.CallCount("ListImages"), srv.CallCount("ListContainers")
	for i := 1; i < int(imagegc.DefaultDetectPeriod/imagegc.DefaultImageListPeriod); i++ {
		want := m.Passes() + 1
		waitFor(t, "Run's tickers", func() bool { return clk.Waiters() >= 3 })
		clk.Step(imagegc.DefaultImageListPeriod)
		waitFor(t, "an image list refresh", func() bool { return m.Passes() >= want })
		if got := srv.CallCount("ListImages"); got != images+i {
			t.Fatalf("after %d refreshes: %d image listings, want %d", i, got, images+i)
		}
		if got := srv.CallCount("ListContainers"); got != containers {
			t.Fatalf("after %d refreshes: containers listed %d times, want %d (none since the first detection)", i, got, containers)
		}
	}
	if len(m.NodeImages()) != 2 {
		t.Fatalf("node images %v, want both", m.NodeImages())
	}
	// The 5-minute mark: the list refresh and a detection, which lists the
	// containers.
	waitFor(t, "Run's tickers", func() bool { return clk.Waiters() >= 3 })
	clk.Step(imagegc.DefaultImageListPeriod)
	waitFor(t, "a detection at DetectPeriod", func() bool { return srv.CallCount("ListContainers") > containers })
}
