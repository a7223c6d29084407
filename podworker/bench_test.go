package podworker_test

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/podworker"
	pwt "github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime"
)

// countingSyncer is a no-op Syncer that counts calls and signals when a
// target count of one method is reached.
type countingSyncer struct {
	synced, terminating, terminated atomic.Int64
	syncTarget, doneTarget          atomic.Int64
	syncedCh, doneCh                chan struct{}
	block                           chan struct{} // when set, SyncPod waits on it
}

func newCountingSyncer() *countingSyncer {
	return &countingSyncer{syncedCh: make(chan struct{}, 1), doneCh: make(chan struct{}, 1)}
}

func (s *countingSyncer) SyncPod(ctx context.Context, _ podworker.SyncPodType, _, _ *v1.Pod, _ *runtime.PodStatus) (bool, error) {
	if s.block != nil {
		select {
		case <-s.block:
		case <-ctx.Done():
		}
	}
	if s.synced.Add(1) == s.syncTarget.Load() {
		s.syncedCh <- struct{}{}
	}
	return false, nil
}

func (s *countingSyncer) SyncTerminatingPod(context.Context, *v1.Pod, *runtime.PodStatus, *int64, func(*v1.PodStatus)) error {
	s.terminating.Add(1)
	return nil
}

func (s *countingSyncer) SyncTerminatingRuntimePod(context.Context, *runtime.Pod) error { return nil }

func (s *countingSyncer) SyncTerminatedPod(context.Context, *v1.Pod, *runtime.PodStatus) error {
	if s.terminated.Add(1) == s.doneTarget.Load() {
		s.doneCh <- struct{}{}
	}
	return nil
}

func benchPods(prefix string, n int) []*v1.Pod {
	pods := make([]*v1.Pod, n)
	gp := int64(30)
	for i := range pods {
		pods[i] = &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{UID: types.UID(fmt.Sprintf("%s-%07d", prefix, i)), Name: fmt.Sprintf("pod-%d", i), Namespace: "bench"},
			Spec:       v1.PodSpec{TerminationGracePeriodSeconds: &gp, Containers: []v1.Container{{Name: "c", Image: "i"}}},
		}
	}
	return pods
}

func startBench(b *testing.B, s podworker.Syncer, resync time.Duration) (*podworker.Workers, func()) {
	b.Helper()
	w, err := podworker.New(podworker.Options{Syncer: s, ResyncInterval: resync})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	if err := pwt.Poll(0, w.Running); err != nil {
		b.Fatal("Run did not start")
	}
	return w, func() { cancel(); <-done }
}

// BenchmarkLifecycle: N pods created until every one has been synced, then
// killed with grace 0 until every one is finished, then forgotten. One op is
// the whole batch; pods/s and allocations and bytes per pod are reported.
func BenchmarkLifecycle(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			s := newCountingSyncer()
			w, stop := startBench(b, s, time.Hour)
			defer stop()
			zero := int64(0)
			kill := &podworker.KillPodOptions{PodTerminationGracePeriodSecondsOverride: &zero}
			batches := make([][]*v1.Pod, b.N)
			for i := range batches {
				batches[i] = benchPods(fmt.Sprintf("b%d", i), n)
			}
			var before, after goruntime.MemStats
			goruntime.GC()
			goruntime.ReadMemStats(&before)
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				pods := batches[i]
				s.syncTarget.Store(s.synced.Load() + int64(n))
				for _, p := range pods {
					w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: p})
				}
				<-s.syncedCh
				s.doneTarget.Store(s.terminated.Load() + int64(n))
				for _, p := range pods {
					w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, Pod: p, KillPodOptions: kill})
				}
				<-s.doneCh
				if err := pwt.Poll(0, func() bool { return w.Busy() == 0 }); err != nil {
					b.Fatal("workers did not go idle")
				}
				if got := w.SyncKnownPods(nil); len(got) != 0 {
					b.Fatalf("%d pods left", len(got))
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			goruntime.ReadMemStats(&after)
			total := float64(n * b.N)
			b.ReportMetric(total/elapsed.Seconds(), "pods/s")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/total, "allocs/pod")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/total, "B/pod")
		})
	}
}

// BenchmarkIdle: N synced pods with no pending work. Reports the heap and
// goroutine stack held per idle pod (pod objects excluded) and the number of
// goroutines.
func BenchmarkIdle(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				pods := benchPods("idle", n)
				s := newCountingSyncer()
				s.syncTarget.Store(int64(n))
				var before, after goruntime.MemStats
				goruntime.GC()
				goruntime.ReadMemStats(&before)
				g0 := goruntime.NumGoroutine()
				w, stop := startBench(b, s, time.Hour)
				for _, p := range pods {
					w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: p})
				}
				<-s.syncedCh
				if err := pwt.Poll(0, func() bool { return w.Busy() == 0 }); err != nil {
					b.Fatal("workers did not go idle")
				}
				goruntime.GC()
				goruntime.ReadMemStats(&after)
				g1 := goruntime.NumGoroutine()
				b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(n), "heap-B/pod")
				b.ReportMetric(float64(int64(after.StackInuse)-int64(before.StackInuse))/float64(n), "stack-B/pod")
				b.ReportMetric(float64(g1-g0), "goroutines")
				stop()
				goruntime.KeepAlive(pods)
				goruntime.KeepAlive(w)
			}
		})
	}
}

// BenchmarkSyncKnownPods: N synced, idle pods, all desired.
func BenchmarkSyncKnownPods(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			pods := benchPods("known", n)
			s := newCountingSyncer()
			s.syncTarget.Store(int64(n))
			w, stop := startBench(b, s, time.Hour)
			defer stop()
			for _, p := range pods {
				w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: p})
			}
			<-s.syncedCh
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if got := w.SyncKnownPods(pods); len(got) != n {
					b.Fatalf("got %d pods", len(got))
				}
			}
		})
	}
}

// BenchmarkUpdatePodCoalesced: updates to a pod whose SyncPod is running,
// so each one replaces the pending update.
func BenchmarkUpdatePodCoalesced(b *testing.B) {
	s := newCountingSyncer()
	s.block = make(chan struct{})
	s.syncTarget.Store(-1)
	w, stop := startBench(b, s, time.Hour)
	defer stop()
	defer close(s.block)
	pod := benchPods("busy", 1)[0]
	w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: pod})
	if err := pwt.Poll(0, func() bool { info, _ := w.PodInfo(pod.UID); return info.InFlight }); err != nil {
		b.Fatal("sync not in flight")
	}
	upd := podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, Pod: pod}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.UpdatePod(upd)
	}
}
