package bench

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/runtime"
)

// Podlife runs pods on podlife's podworker.Workers with a no-op Syncer.
// Options are podlife's defaults except ResyncInterval (1h, so that no
// periodic resync happens during a run, as in podlife's own benchmarks) and
// BackOffPeriod (5ms, the first retry delay of client-go's default
// workqueue rate limiter that virtual-kubelet uses; podlife's default is 10s).
type Podlife struct {
	w    *podworker.Workers
	done chan struct{}
	kill *podworker.KillPodOptions
}

// Name implements Engine.
func (e *Podlife) Name() string { return "podlife" }

// Start implements Engine.
func (e *Podlife) Start(ctx context.Context, h *Hooks) error {
	w, err := podworker.New(podworker.Options{
		Syncer:         &syncer{h: h},
		ResyncInterval: time.Hour,
		BackOffPeriod:  5 * time.Millisecond,
	})
	if err != nil {
		return err
	}
	zero := int64(0)
	e.w, e.done = w, make(chan struct{})
	e.kill = &podworker.KillPodOptions{PodTerminationGracePeriodSecondsOverride: &zero}
	go func() { defer close(e.done); _ = w.Run(ctx) }()
	return poll(10*time.Second, w.Running)
}

// Create implements Engine.
func (e *Podlife) Create(pod *v1.Pod) error {
	e.w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: pod})
	return nil
}

// Delete implements Engine.
func (e *Podlife) Delete(pod *v1.Pod) error {
	e.w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, Pod: pod, KillPodOptions: e.kill})
	return nil
}

// Housekeep implements Engine: SyncKnownPods forgets finished pods.
func (e *Podlife) Housekeep(desired []*v1.Pod) { e.w.SyncKnownPods(desired) }

// Quiet implements Engine.
func (e *Podlife) Quiet() bool { return e.w.Busy() == 0 }

// Idle implements Engine: no pod has work, and once SyncKnownPods(nil) has
// forgotten the finished pods none is known.
func (e *Podlife) Idle() bool {
	if e.w.Busy() != 0 {
		return false
	}
	return len(e.w.SyncKnownPods(nil)) == 0
}

// Stop implements Engine.
func (e *Podlife) Stop() { <-e.done }

// Workers returns the engine's Workers (for tests).
func (e *Podlife) Workers() *podworker.Workers { return e.w }

// syncer is the no-op podworker.Syncer shared by podlife and the bare
// reference: it reports to the hooks and injects errors.
type syncer struct{ h *Hooks }

var _ podworker.Syncer = (*syncer)(nil)

func (s *syncer) SyncPod(_ context.Context, _ podworker.SyncPodType, pod, _ *v1.Pod, _ *runtime.PodStatus) (bool, error) {
	if s.h.Faults.Fail() {
		return false, fmt.Errorf("sync pod %s: %w", pod.Name, ErrInjected)
	}
	s.h.Synced(podIndex(pod.Name))
	return false, nil
}

func (s *syncer) SyncTerminatingPod(_ context.Context, pod *v1.Pod, _ *runtime.PodStatus, _ *int64, _ func(*v1.PodStatus)) error {
	if s.h.Faults.Fail() {
		return fmt.Errorf("stop pod %s: %w", pod.Name, ErrInjected)
	}
	return nil
}

func (s *syncer) SyncTerminatingRuntimePod(context.Context, *runtime.Pod) error { return nil }

func (s *syncer) SyncTerminatedPod(_ context.Context, pod *v1.Pod, _ *runtime.PodStatus) error {
	s.h.Finished(podIndex(pod.Name))
	return nil
}
