package shutdown

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// BenchmarkShutdown measures the manager's own cost for a shutdown of N
// pods in three priority groups, with a KillPod that returns at once: the
// grouping, a goroutine per pod, the status edits and the group waits.
func BenchmarkShutdown(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			pods := make([]*v1.Pod, n)
			prios := []int32{0, 1000, SystemCriticalPriority}
			for i := range pods {
				p := prios[i%3]
				pods[i] = newPod(fmt.Sprint("p", i), &p, nil)
			}
			kill := func(_ context.Context, _ *v1.Pod, _ int64, fn func(*v1.PodStatus)) error {
				st := v1.PodStatus{Phase: v1.PodRunning}
				fn(&st)
				return nil
			}
			clk := clocktesting.NewFakeClock(time.Now())
			b.ReportAllocs()
			for b.Loop() {
				m, err := New(Options{
					ShutdownGracePeriodByPodPriority: []PriorityGracePeriod{
						{Priority: 0, ShutdownGracePeriodSeconds: 10}, {Priority: 1000, ShutdownGracePeriodSeconds: 10},
						{Priority: SystemCriticalPriority, ShutdownGracePeriodSeconds: 10}},
					ActivePods: func() []*v1.Pod { return pods }, KillPod: kill, Clock: clk,
				})
				if err != nil {
					b.Fatal(err)
				}
				if res, err := m.Shutdown(context.Background()); err != nil || res.Stopped != n {
					b.Fatalf("%+v %v", res, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/pod")
		})
	}
}
