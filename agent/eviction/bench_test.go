package eviction

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"
)

// benchNode serves fixed stats for many pods; every pass sees newer
// stats.
type benchNode struct {
	clock    *clocktesting.FakeClock
	pods     []*v1.Pod
	stats    []statsapi.PodStats
	memAvail uint64
	evicted  int
}

func (b *benchNode) NodeStats(context.Context) (*statsapi.NodeStats, error) {
	t := metav1.NewTime(b.clock.Now())
	ws := 64*uint64(gi) - b.memAvail
	capacity, avail := uint64(1000*gi), uint64(500*gi)
	inodes, free := uint64(1e8), uint64(5e7)
	maxPID, procs := int64(4194304), int64(200000)
	fs := &statsapi.FsStats{Time: t, AvailableBytes: &avail, CapacityBytes: &capacity, Inodes: &inodes, InodesFree: &free}
	return &statsapi.NodeStats{
		Memory:  &statsapi.MemoryStats{Time: t, AvailableBytes: &b.memAvail, WorkingSetBytes: &ws},
		Fs:      fs,
		Runtime: &statsapi.RuntimeStats{ImageFs: fs},
		Rlimit:  &statsapi.RlimitStats{Time: t, MaxPID: &maxPID, NumOfRunningProcesses: &procs},
	}, nil
}

func (b *benchNode) ListPodStats(context.Context) ([]statsapi.PodStats, error) { return b.stats, nil }

func newBenchNode(n int) *benchNode {
	b := &benchNode{clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), memAvail: uint64(10 * gi)}
	limit := resource.MustParse("1Gi")
	for i := range n {
		uid := types.UID(fmt.Sprintf("uid-%d", i))
		c := v1.Container{Name: "c", Image: "img"}
		if i%3 == 1 {
			c.Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}
		}
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i), Namespace: "ns", UID: uid},
			Spec:       v1.PodSpec{Containers: []v1.Container{c}},
		}
		if i%10 == 0 {
			pod.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
		}
		ws, used := uint64(i%200)*uint64(mi), uint64(mi)
		ps := statsapi.PodStats{
			PodRef:     statsapi.PodReference{Name: pod.Name, Namespace: "ns", UID: string(uid)},
			Memory:     &statsapi.MemoryStats{WorkingSetBytes: &ws},
			Containers: []statsapi.ContainerStats{{Name: "c", Memory: &statsapi.MemoryStats{WorkingSetBytes: &ws}}},
		}
		if i%10 == 0 {
			ps.VolumeStats = []statsapi.VolumeStats{{Name: "scratch", FsStats: statsapi.FsStats{UsedBytes: &used}}}
		}
		b.pods = append(b.pods, pod)
		b.stats = append(b.stats, ps)
	}
	return b
}

// BenchmarkSynchronize is one eviction pass over 100,000 pods: without
// pressure (the signals, the thresholds and every pod's local storage
// limits checked), and under memory pressure (the same, plus ranking every
// pod and evicting the first).
func BenchmarkSynchronize(b *testing.B) {
	for _, tc := range []struct {
		name     string
		memAvail int64
	}{{"pods=100000/no-pressure", 10 * gi}, {"pods=100000/memory-pressure", 50 * mi}} {
		b.Run(tc.name, func(b *testing.B) {
			n := newBenchNode(100000)
			n.memAvail = uint64(tc.memAvail)
			m, err := New(Options{
				NodeStats: n, PodStats: n, Clock: n.clock,
				ActivePods: func() []*v1.Pod { return n.pods },
				Evict:      func(context.Context, *v1.Pod, Eviction) error { n.evicted++; return nil },
			})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				n.clock.Step(10 * time.Second)
				if _, err := m.Synchronize(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
			if tc.memAvail < 100*mi && n.evicted == 0 {
				b.Fatal("nothing evicted under pressure")
			}
		})
	}
}

// cpuTime is the process's user and system CPU time: on a shared machine,
// where wall time depends on the other loads, it is the steadier figure.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
