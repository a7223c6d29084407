package bench

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Namespace is the namespace of every benchmark pod.
const Namespace = "bench"

// Engine is one pod lifecycle implementation under test.
type Engine interface {
	// Name identifies the engine in tables.
	Name() string
	// Start starts the engine with its provider wired to h and returns once
	// it accepts pods. ctx ends the engine; Stop waits for it.
	Start(ctx context.Context, h *Hooks) error
	// Create asks the engine to run pod.
	Create(pod *v1.Pod) error
	// Delete asks the engine to terminate pod (grace period 0).
	Delete(pod *v1.Pod) error
	// Housekeep tells the engine which pods are still desired (podlife's
	// SyncKnownPods; a no-op elsewhere). Churn calls it periodically.
	Housekeep(desired []*v1.Pod)
	// Quiet reports whether no work is queued or in flight (pods may still
	// be known).
	Quiet() bool
	// Idle reports whether the engine holds no work and no finished pod
	// (it is polled after the last pod finished).
	Idle() bool
	// Stop stops the engine and waits until it has exited. The context
	// passed to Start must be cancelled before.
	Stop()
}

// NewPod returns the benchmark pod with index idx: the same shape as the
// pods of podlife's own podworker benchmarks.
func NewPod(idx int) *v1.Pod {
	gp := int64(30)
	name := PodName(idx)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID("uid-" + name), Name: name, Namespace: Namespace},
		Spec:       v1.PodSpec{TerminationGracePeriodSeconds: &gp, Containers: []v1.Container{{Name: "c", Image: "i"}}},
	}
}

// NewPods returns n pods with indexes from first on.
func NewPods(first, n int) []*v1.Pod {
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = NewPod(first + i)
	}
	return pods
}

// poll calls cond every millisecond until it is true or timeout passes.
func poll(timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("condition not met within %v", timeout)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}
