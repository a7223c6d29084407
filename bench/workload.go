package bench

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
)

// counter counts hook calls and closes reached once a target is met.
type counter struct {
	n       atomic.Int64
	target  atomic.Int64
	reached chan struct{}
}

func newCounter(target int) *counter {
	c := &counter{reached: make(chan struct{})}
	c.target.Store(int64(target))
	return c
}

func (c *counter) add(int) {
	if c.n.Add(1) == c.target.Load() {
		close(c.reached)
	}
}

// wait waits for the target until deadline; false when it passed.
func (c *counter) wait(deadline *time.Timer) bool {
	select {
	case <-c.reached:
		return true
	case <-deadline.C:
		return false
	}
}

// LifecycleResult is one run of Lifecycle.
type LifecycleResult struct {
	Pods     int
	Synced   int // pods synced (created in the provider)
	Finished int // pods finished (deleted in the provider)
	Complete bool
	Elapsed  time.Duration
	// PodsPerSec is Pods/Elapsed for a complete run. For a run cut short by
	// its bound it is the rate of half-lifecycles, (Synced+Finished)/2 per
	// second, which flatters the engine (deletion is the longer half).
	PodsPerSec   float64
	AllocsPerPod float64
	BytesPerPod  float64
}

func (r LifecycleResult) String() string {
	s := fmt.Sprintf("%.0f pods/s, %.1f allocs/pod, %.0f B/pod", r.PodsPerSec, r.AllocsPerPod, r.BytesPerPod)
	if !r.Complete {
		s += fmt.Sprintf(" (bounded at %v: %d synced, %d finished of %d)", r.Elapsed.Round(time.Second), r.Synced, r.Finished, r.Pods)
	}
	return s
}

// Lifecycle starts a fresh e, creates n pods until every one is synced,
// deletes them until every one is finished, waits until e is idle (podlife
// forgets them with SyncKnownPods) and stops e. The clock runs from the
// first create to idle; a run longer than bound is cut short and reported
// as incomplete.
func Lifecycle(e Engine, n int, bound time.Duration) (LifecycleResult, error) {
	r := LifecycleResult{Pods: n}
	synced, finished := newCounter(n), newCounter(n)
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); e.Stop() }()
	if err := e.Start(ctx, &Hooks{Synced: synced.add, Finished: finished.add}); err != nil {
		return r, err
	}
	pods := NewPods(0, n)
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	start := time.Now()
	for _, p := range pods {
		if err := e.Create(p); err != nil {
			return r, err
		}
	}
	r.Complete = synced.wait(deadline)
	if r.Complete {
		for _, p := range pods {
			if err := e.Delete(p); err != nil {
				return r, err
			}
		}
		r.Complete = finished.wait(deadline)
	}
	if r.Complete {
		r.Complete = poll(time.Until(start.Add(bound)), e.Idle) == nil
	}
	r.Elapsed = time.Since(start)
	goruntime.ReadMemStats(&after)
	r.Synced, r.Finished = int(synced.n.Load()), int(finished.n.Load())
	if r.Complete {
		r.PodsPerSec = float64(n) / r.Elapsed.Seconds()
	} else {
		r.PodsPerSec = float64(r.Synced+r.Finished) / 2 / r.Elapsed.Seconds()
	}
	r.AllocsPerPod = float64(after.Mallocs-before.Mallocs) / float64(n)
	r.BytesPerPod = float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
	return r, nil
}

// MemoryResult is one run of Memory.
type MemoryResult struct {
	Pods        int
	HeapPerPod  float64 // growth of the live heap after GC, per pod
	StackPerPod float64 // growth of goroutine stacks in use, per pod
	Goroutines  int     // goroutines added
}

// PerPod is heap plus stacks per pod.
func (r MemoryResult) PerPod() float64 { return r.HeapPerPod + r.StackPerPod }

// Sub returns r minus base (per-pod figures and goroutines).
func (r MemoryResult) Sub(base MemoryResult) MemoryResult {
	return MemoryResult{Pods: r.Pods, HeapPerPod: r.HeapPerPod - base.HeapPerPod, StackPerPod: r.StackPerPod - base.StackPerPod, Goroutines: r.Goroutines - base.Goroutines}
}

func (r MemoryResult) String() string {
	return fmt.Sprintf("%.0f B/pod (heap %.0f + stack %.0f), %+d goroutines", r.PerPod(), r.HeapPerPod, r.StackPerPod, r.Goroutines)
}

// Memory starts a fresh e, creates n pods, waits until every one is synced
// and e is quiet, and reports the growth of the live heap (after GC) and of
// goroutine stacks per pod. The pod objects are built before the baseline,
// so they are excluded; so is everything e allocates when it starts.
func Memory(e Engine, n int, bound time.Duration) (MemoryResult, error) {
	r := MemoryResult{Pods: n}
	synced := newCounter(n)
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); e.Stop() }()
	if err := e.Start(ctx, &Hooks{Synced: synced.add, Finished: func(int) {}}); err != nil {
		return r, err
	}
	pods := NewPods(0, n)
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	g0 := goruntime.NumGoroutine()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for _, p := range pods {
		if err := e.Create(p); err != nil {
			return r, err
		}
	}
	if !synced.wait(deadline) {
		return r, fmt.Errorf("%s: %d of %d pods synced within %v", e.Name(), synced.n.Load(), n, bound)
	}
	if err := poll(bound, e.Quiet); err != nil {
		return r, fmt.Errorf("%s: not quiet: %w", e.Name(), err)
	}
	goruntime.GC()
	goruntime.GC()
	goruntime.ReadMemStats(&after)
	r.Goroutines = goruntime.NumGoroutine() - g0
	r.HeapPerPod = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
	r.StackPerPod = float64(int64(after.StackInuse)-int64(before.StackInuse)) / float64(n)
	goruntime.KeepAlive(pods)
	return r, nil
}

// ChurnResult is one run of Churn.
type ChurnResult struct {
	Cycles   int // cycles asked for
	Done     int // cycles finished
	InFlight int
	Complete bool
	Elapsed  time.Duration
	// CyclesPerSec is Done/Elapsed.
	CyclesPerSec float64
	// Injected is the number of provider errors injected (each one retried
	// by the engine, since every cycle finished).
	Injected int64
}

func (r ChurnResult) String() string {
	s := fmt.Sprintf("%.0f cycles/s, %d errors retried", r.CyclesPerSec, r.Injected)
	if !r.Complete {
		s += fmt.Sprintf(" (bounded at %v: %d of %d cycles)", r.Elapsed.Round(time.Second), r.Done, r.Cycles)
	}
	return s
}

// Churn starts a fresh e and runs cycles create/delete cycles with inFlight
// pods alive at a time: each pod is deleted as soon as it is synced, and a
// new pod is created as soon as one finishes. faultEvery > 0 makes every
// faultEvery-th creation or deletion call of the provider fail. Every 1,000
// finished cycles the engine is told which pods are still desired (podlife
// forgets its finished pods then). A run longer than bound is cut short.
func Churn(e Engine, cycles, inFlight int, faultEvery int64, bound time.Duration) (ChurnResult, error) {
	r := ChurnResult{Cycles: cycles, InFlight: inFlight}
	type alive struct {
		pod    *v1.Pod
		killed bool
	}
	synced, finished := make(chan int, 2*inFlight), make(chan int, 2*inFlight)
	faults := &Faults{Every: faultEvery}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); e.Stop() }()
	h := &Hooks{
		Synced:   func(i int) { synced <- i },
		Finished: func(i int) { finished <- i },
		Faults:   faults,
	}
	if err := e.Start(ctx, h); err != nil {
		return r, err
	}
	pods := make(map[int]*alive, inFlight)
	next := 0
	create := func() error {
		p := NewPod(next)
		pods[next] = &alive{pod: p}
		next++
		return e.Create(p)
	}
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	start := time.Now()
	for next < inFlight && next < cycles {
		if err := create(); err != nil {
			return r, err
		}
	}
loop:
	for r.Done < cycles {
		select {
		case i := <-synced:
			a := pods[i]
			if a == nil || a.killed {
				return r, fmt.Errorf("%s: pod %d synced twice or unknown", e.Name(), i)
			}
			a.killed = true
			if err := e.Delete(a.pod); err != nil {
				return r, err
			}
		case i := <-finished:
			if pods[i] == nil {
				return r, fmt.Errorf("%s: pod %d finished twice or unknown", e.Name(), i)
			}
			delete(pods, i)
			r.Done++
			if r.Done%1000 == 0 {
				desired := make([]*v1.Pod, 0, len(pods))
				for _, a := range pods {
					if !a.killed {
						desired = append(desired, a.pod)
					}
				}
				e.Housekeep(desired)
			}
			if next < cycles {
				if err := create(); err != nil {
					return r, err
				}
			}
		case <-deadline.C:
			break loop
		}
	}
	r.Complete = r.Done == cycles && poll(time.Until(start.Add(bound)), e.Idle) == nil
	r.Elapsed = time.Since(start)
	r.CyclesPerSec = float64(r.Done) / r.Elapsed.Seconds()
	r.Injected = faults.Injected()
	return r, nil
}
