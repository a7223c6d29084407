package imagegc_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/agent/imagegc"
)

// BenchmarkGarbageCollect measures a collection pass over a node with
// many images (half of them in use), the usage under the high threshold:
// detection, records, the eviction order and the stats, no removal.
func BenchmarkGarbageCollect(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprint(n, "images"), func(b *testing.B) {
			rt := newFakeRuntime()
			for i := range n {
				id := fmt.Sprintf("sha256:%06d", i)
				rt.images[id] = img(id, int64(i), "docker.io/library/i"+id[7:]+":1")
				if i%2 == 0 {
					rt.use("c"+id, id)
				}
			}
			clk := clocktesting.NewFakeClock(t0)
			// Below the high threshold: the pass detects and sorts, then
			// stops at the stats.
			m, err := imagegc.New(imagegc.Options{Runtime: rt, Stats: newDisk(rt, 1<<62, 0).stats, Clock: clk})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				clk.Step(time.Second)
				if err := m.GarbageCollect(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
