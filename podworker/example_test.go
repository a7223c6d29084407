package podworker_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/runtime"
)

// A pod goes through create, kill and cleanup with a Syncer built from
// functions.
func ExampleNew() {
	var mu sync.Mutex
	var events []string
	record := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, s)
	}
	synced, finished := make(chan struct{}, 1), make(chan struct{})
	syncer := podworker.SyncerFuncs{
		SyncPodFunc: func(_ context.Context, t podworker.SyncPodType, pod, _ *v1.Pod, _ *runtime.PodStatus) (bool, error) {
			record("SyncPod " + t.String() + " " + pod.Name)
			synced <- struct{}{}
			return false, nil
		},
		SyncTerminatingPodFunc: func(_ context.Context, pod *v1.Pod, _ *runtime.PodStatus, gp *int64, _ func(*v1.PodStatus)) error {
			record(fmt.Sprintf("SyncTerminatingPod %s grace=%ds", pod.Name, *gp))
			return nil
		},
		SyncTerminatedPodFunc: func(_ context.Context, pod *v1.Pod, _ *runtime.PodStatus) error {
			record("SyncTerminatedPod " + pod.Name)
			close(finished)
			return nil
		},
	}
	w, err := podworker.New(podworker.Options{Syncer: syncer})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = w.Run(ctx) }()

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "1234", Name: "web", Namespace: "default"}}
	w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: pod})
	<-synced

	killed := make(chan struct{})
	grace := int64(5)
	w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, Pod: pod,
		KillPodOptions: &podworker.KillPodOptions{CompletedCh: killed, PodTerminationGracePeriodSecondsOverride: &grace}})
	<-killed // no container runs any more
	<-finished
	cancel()
	<-stopped

	mu.Lock()
	defer mu.Unlock()
	for _, e := range events {
		fmt.Println(e)
	}
	// Output:
	// SyncPod create web
	// SyncTerminatingPod web grace=5s
	// SyncTerminatedPod web
}

// loggingSyncer is a custom Syncer: it would drive a runtime; here it
// prints.
type loggingSyncer struct{ out chan<- string }

func (s loggingSyncer) SyncPod(ctx context.Context, t podworker.SyncPodType, pod, mirror *v1.Pod, st *runtime.PodStatus) (bool, error) {
	s.out <- "run " + pod.Name
	// A pod whose containers have all exited reports isTerminal: the worker
	// then terminates and cleans it up by itself.
	return pod.Labels["job"] == "done", nil
}

func (s loggingSyncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, st *runtime.PodStatus, gp *int64, fn func(*v1.PodStatus)) error {
	s.out <- "stop " + pod.Name
	return nil
}

func (s loggingSyncer) SyncTerminatingRuntimePod(ctx context.Context, rp *runtime.Pod) error {
	s.out <- "stop orphan " + rp.Name
	return nil
}

func (s loggingSyncer) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, st *runtime.PodStatus) error {
	s.out <- "clean up " + pod.Name
	return nil
}

// A custom Syncer: a pod that reports isTerminal from SyncPod moves through
// termination and cleanup with no further call from the caller.
func ExampleSyncer() {
	out := make(chan string, 10)
	w, _ := podworker.New(podworker.Options{Syncer: loggingSyncer{out: out}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = w.Run(ctx) }()

	job := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "j1", Name: "job", Namespace: "default", Labels: map[string]string{"job": "done"}}}
	w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: job})
	for range 3 {
		fmt.Println(<-out)
	}
	// Output:
	// run job
	// stop job
	// clean up job
}

// Stepping the pure state machine of one pod, with no goroutines or clock.
func ExampleMachine() {
	var m podworker.Machine
	now := time.Unix(0, 0)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", Name: "web", Namespace: "default"}}

	m.Update(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: pod}, now, true)
	work, _, _, _ := m.Next(now, podworker.StartAllowed)
	fmt.Println(work.Kind, m.Lifecycle())
	eff, _ := m.Complete(now, false, nil)
	fmt.Println("requeue for resync:", eff.Requeue == podworker.RequeueResync)

	grace := int64(3)
	m.Update(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, Pod: pod,
		KillPodOptions: &podworker.KillPodOptions{PodTerminationGracePeriodSecondsOverride: &grace}}, now, true)
	work, _, _, _ = m.Next(now, podworker.StartAllowed)
	fmt.Println(work.Kind, work.GracePeriod, m.Lifecycle())
	m.Complete(now, false, nil)
	work, _, _, _ = m.Next(now, podworker.StartAllowed)
	fmt.Println(work.Kind, m.Lifecycle())
	m.Complete(now, false, nil)
	fmt.Println(m.Lifecycle())
	// Output:
	// SyncPod syncing
	// requeue for resync: true
	// SyncTerminatingPod 3 terminating
	// SyncTerminatedPod terminated
	// finished
}
