package bench

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/runtime"
)

// Bare is the lower-bound reference: the same lifecycle, calling the same
// no-op Syncer, on one goroutine per pod and a kill channel, with no state
// machine. Create starts a goroutine that calls SyncPod until it succeeds
// and then waits for its kill channel; Delete closes that channel, and the
// goroutine calls SyncTerminatingPod and SyncTerminatedPod until they succeed
// and exits. Errors are retried after 5ms. It handles none of what podlife
// handles (updates, a kill during a sync, grace periods, static pods,
// orphans, queries); it only shows the cost floor of the design.
type Bare struct {
	ctx context.Context
	s   podworker.Syncer
	wg  sync.WaitGroup

	mu   sync.Mutex
	kill map[types.UID]chan struct{}
}

// Name implements Engine.
func (e *Bare) Name() string { return "bare goroutines" }

// Start implements Engine.
func (e *Bare) Start(ctx context.Context, h *Hooks) error {
	e.ctx, e.s, e.kill = ctx, &syncer{h: h}, make(map[types.UID]chan struct{})
	return nil
}

// Create implements Engine.
func (e *Bare) Create(pod *v1.Pod) error {
	ch := make(chan struct{})
	e.mu.Lock()
	e.kill[pod.UID] = ch
	e.mu.Unlock()
	e.wg.Add(1)
	go e.run(pod, ch)
	return nil
}

func (e *Bare) run(pod *v1.Pod, kill chan struct{}) {
	defer e.wg.Done()
	ctx := e.ctx
	status := &runtime.PodStatus{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	for {
		if _, err := e.s.SyncPod(ctx, podworker.SyncPodCreate, pod, nil, status); err == nil || !e.backOff() {
			break
		}
	}
	select {
	case <-kill:
	case <-ctx.Done():
		return
	}
	gp := podworker.MinGracePeriodSeconds
	for e.s.SyncTerminatingPod(ctx, pod, status, &gp, nil) != nil && e.backOff() {
	}
	for e.s.SyncTerminatedPod(ctx, pod, status) != nil && e.backOff() {
	}
	e.mu.Lock()
	delete(e.kill, pod.UID)
	e.mu.Unlock()
}

// backOff waits before a retry; false means the engine is stopping.
func (e *Bare) backOff() bool {
	t := time.NewTimer(5 * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-e.ctx.Done():
		return false
	}
}

// Delete implements Engine.
func (e *Bare) Delete(pod *v1.Pod) error {
	e.mu.Lock()
	ch := e.kill[pod.UID]
	e.mu.Unlock()
	if ch != nil {
		close(ch)
	}
	return nil
}

// Housekeep implements Engine (nothing to forget).
func (e *Bare) Housekeep([]*v1.Pod) {}

// Quiet implements Engine: a pod's goroutine holds no queued work.
func (e *Bare) Quiet() bool { return true }

// Idle implements Engine.
func (e *Bare) Idle() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.kill) == 0
}

// Stop implements Engine.
func (e *Bare) Stop() { e.wg.Wait() }
