package logrotate_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/podlife/podlife/agent/logrotate"
)

// BenchmarkPass is the steady state of a node: N running containers whose
// logs are below the size, on a runtime that answers at once. A pass costs
// the listing and a stat per container.
func BenchmarkPass(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			fr := newFakeRuntime()
			dir := b.TempDir()
			for i := range n {
				fr.run(b, dir, fmt.Sprintf("p%04d", i), "main")
			}
			m, err := logrotate.New(logrotate.Options{Runtime: fr})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if _, err := m.Rotate(ctx); err != nil { // learn the log paths
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if res, err := m.Rotate(ctx); err != nil || res.Containers != n {
					b.Fatalf("%+v %v", res, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/container")
		})
	}
}
