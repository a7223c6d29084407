package imagegc_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/agent/imagegc"
	"github.com/podlife/podlife/runtime"
)

// fakeRuntime is an in-memory image store with containers using images.
type fakeRuntime struct {
	mu      sync.Mutex
	images  map[string]runtime.Image
	pods    []*runtime.Pod
	refuse  map[string]error // RemoveImage of these IDs fails
	removed []string
	listErr error
}

func newFakeRuntime(imgs ...runtime.Image) *fakeRuntime {
	f := &fakeRuntime{images: map[string]runtime.Image{}, refuse: map[string]error{}}
	for _, i := range imgs {
		f.images[i.ID] = i
	}
	return f
}

func (f *fakeRuntime) ListImages(context.Context) ([]runtime.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listErr != nil {
		return nil, f.listErr
	}
	var out []runtime.Image
	for _, i := range f.images {
		out = append(out, i)
	}
	slices.SortFunc(out, func(a, b runtime.Image) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (f *fakeRuntime) RemoveImage(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.refuse[id]; err != nil {
		return err
	}
	for _, p := range f.pods {
		for _, c := range p.Containers {
			if c.ImageID == id {
				return fmt.Errorf("image %s in use by %s: %w", id, c.Name, runtime.ErrFailedPrecondition)
			}
		}
	}
	delete(f.images, id)
	f.removed = append(f.removed, id)
	return nil
}

func (f *fakeRuntime) GetPods(context.Context, bool) ([]*runtime.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.pods), nil
}

// use makes a container of image id exist (running or exited).
func (f *fakeRuntime) use(name, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods = append(f.pods, &runtime.Pod{ID: types.UID("uid-" + name), Name: name, Namespace: "ns",
		Containers: []*runtime.Container{{Name: name, ImageID: id, State: runtime.ContainerStateExited}}})
}

// unuse removes the containers named name.
func (f *fakeRuntime) unuse(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods = slices.DeleteFunc(f.pods, func(p *runtime.Pod) bool { return p.Name == name })
}

func (f *fakeRuntime) has(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.images[id]
	return ok
}

func (f *fakeRuntime) used() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n uint64
	for _, i := range f.images {
		n += uint64(i.Size)
	}
	return n
}

func (f *fakeRuntime) removedIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.removed)
}

// disk is a file system of capacity bytes holding the runtime's images
// and other bytes.
type disk struct {
	rt       *fakeRuntime
	capacity atomic.Uint64
	other    atomic.Uint64
}

func newDisk(rt *fakeRuntime, capacity, other uint64) *disk {
	d := &disk{rt: rt}
	d.capacity.Store(capacity)
	d.other.Store(other)
	return d
}

func (d *disk) stats(context.Context) (imagegc.FsStats, error) {
	c, used := d.capacity.Load(), d.rt.used()+d.other.Load()
	return imagegc.FsStats{Mountpoint: "/images", CapacityBytes: c, AvailableBytes: c - min(used, c), UsedBytes: d.rt.used()}, nil
}

// recorder records events.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Eventf(_ k8sruntime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, eventtype+" "+reason+" "+fmt.Sprintf(messageFmt, args...))
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// logLines is a logger that keeps its lines (errors and V(0) infos).
type logLines struct {
	mu    sync.Mutex
	lines []string
	t     testing.TB
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
		l.t.Log(args)
	}, funcr.Options{Verbosity: 1})
}

func (l *logLines) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, substr) {
			n++
		}
	}
	return n
}

// run runs m (with a DetectPeriod and an ImageListPeriod longer than the
// test) on a fake clock and returns a function that steps the clock by one
// GCPeriod and waits for the collection pass it causes.
func run(t *testing.T, m *imagegc.Manager, clk *clocktesting.FakeClock, period time.Duration) (step func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	// The first detection and collection.
	waitFor(t, "Run's first passes", func() bool { return m.Passes() >= 2 })
	return func() {
		t.Helper()
		want := m.Passes() + 1
		clk.Step(period)
		waitFor(t, "a collection pass after a clock step", func() bool { return m.Passes() >= want })
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

var errRefused = errors.New("refused by the test")
