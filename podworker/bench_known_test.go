package podworker_test

import (
	"fmt"
	"math/rand/v2"
	goruntime "runtime"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/podworker"
)

// BenchmarkSyncKnownPodsAfterCreate measures SyncKnownPods the way
// housekeeping meets it on a busy agent: N pods are created at once, and as
// soon as the last of them has finished its first SyncPod (not once the
// process is quiet: pod goroutines are still completing and parking, the
// resync schedule is filling, the garbage of the creation wave is
// uncollected) SyncKnownPods is called 20 times in a row with every pod
// desired. One op is one such wave; the metrics are the median, first and
// slowest of the 20 calls over all waves.
func BenchmarkSyncKnownPodsAfterCreate(b *testing.B) {
	const calls = 20
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			var all, first []time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				pods := uuidPods(i, n)
				s := newCountingSyncer()
				s.syncTarget.Store(int64(n))
				goruntime.GC()
				w, stop := startBench(b, s, time.Hour)
				b.StartTimer()
				for _, p := range pods {
					w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: p})
				}
				<-s.syncedCh
				for c := 0; c < calls; c++ {
					start := time.Now()
					got := w.SyncKnownPods(pods)
					d := time.Since(start)
					if len(got) != n {
						b.Fatalf("got %d pods", len(got))
					}
					all = append(all, d)
					if c == 0 {
						first = append(first, d)
					}
				}
				b.StopTimer()
				stop()
				b.StartTimer()
			}
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			slices.Sort(all)
			slices.Sort(first)
			b.ReportMetric(ms(all[len(all)/2]), "ms/call-median")
			b.ReportMetric(ms(first[len(first)/2]), "ms/call-first")
			b.ReportMetric(ms(all[len(all)-1]), "ms/call-max")
		})
	}
}

// uuidPods is benchPods with UIDs shaped like the API server's (random
// UUIDs, 36 bytes), as housekeeping sees them.
func uuidPods(seed, n int) []*v1.Pod {
	pods := benchPods("", n)
	r := rand.New(rand.NewPCG(uint64(seed), 1))
	for _, p := range pods {
		a, c := r.Uint64(), r.Uint64()
		p.UID = types.UID(fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", uint32(a>>32), uint16(a>>16), uint16(a)&0xfff, uint16(c>>48)&0x3fff|0x8000, c&0xffffffffffff))
	}
	return pods
}
