package gc_test

import (
	"fmt"
	"testing"
)

// BenchmarkGarbageCollect10000 times one pass that removes 10,000 dead
// containers (1,000 deleted pods of 10 dead containers and a stopped
// sandbox each) from fakecri over its unix socket, with the default
// options (one removal at a time; runtime/cri asks each container's
// status for its files before it removes it).
//
//	go test ./agent/gc -run XXX -bench GarbageCollect10000 -benchtime 1x -count 3
func BenchmarkGarbageCollect10000(b *testing.B) {
	const pods, perPod = 1000, 10
	for b.Loop() {
		b.StopTimer()
		w := newWorld(b)
		for p := range pods {
			uid := fmt.Sprint("pod-", p)
			sb := w.sandbox(uid, 0)
			for c := range perPod {
				w.container(sb, uid, fmt.Sprint("c", c), 0, false)
			}
			w.stop(sb)
		}
		m := newManager(b, w)
		b.StartTimer()
		res, err := m.GarbageCollect(w.ctx)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if res.Containers != pods*perPod || res.Sandboxes != pods || res.Failed != 0 {
			b.Fatalf("result %+v", res)
		}
		b.ReportMetric(float64(res.Containers), "containers")
		b.StartTimer()
	}
}
