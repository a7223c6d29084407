package bench

import (
	"flag"
	"fmt"
	"testing"
	"time"
)

var (
	vkDefaultBound = flag.Duration("vk-default-bound", 15*time.Second, "time bound of one virtual-kubelet run with its default rate limiter (10 qps)")
	bound          = flag.Duration("bound", 5*time.Minute, "time bound of any other run")
	churnCycles    = flag.Int("churn-cycles", 100000, "create/delete cycles of BenchmarkChurn")
	churnInFlight  = flag.Int("churn-inflight", 1000, "pods in flight in BenchmarkChurn")
)

// engines returns fresh engines, in table order.
func engines() []Engine {
	return []Engine{&Podlife{}, &VK{}, &VK{Permissive: true}, &Bare{}}
}

func boundFor(e Engine) time.Duration {
	if vk, ok := e.(*VK); ok && !vk.Permissive {
		return *vkDefaultBound
	}
	return *bound
}

func engineKey(e Engine) string {
	switch e := e.(type) {
	case *Podlife:
		return "podlife"
	case *VK:
		if e.Permissive {
			return "vk-permissive"
		}
		return "vk-default"
	case *Bare:
		return "bare"
	default:
		return "apionly"
	}
}

func TestSmoke(t *testing.T) {
	for _, e := range append(engines(), &APIOnly{}) {
		t.Run(engineKey(e), func(t *testing.T) {
			r, err := Lifecycle(e, 50, 30*time.Second)
			if err != nil || !r.Complete {
				t.Fatalf("lifecycle: %v, %v", r, err)
			}
		})
	}
	for _, e := range engines() {
		if vk, ok := e.(*VK); ok && !vk.Permissive {
			continue // about 3 cycles/s: too slow for a smoke test
		}
		t.Run(engineKey(e)+"/churn", func(t *testing.T) {
			r, err := Churn(e, 300, 20, 100, 60*time.Second)
			if err != nil || !r.Complete {
				t.Fatalf("churn: %v, %v", r, err)
			}
			if r.Injected == 0 {
				t.Fatal("no error injected")
			}
		})
	}
}

// BenchmarkLifecycle: workload (a). One op is a whole batch on a fresh
// engine; run it with -benchtime 1x -count 5.
func BenchmarkLifecycle(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for i, e := range engines() {
			b.Run(fmt.Sprintf("engine=%s/pods=%d", engineKey(e), n), func(b *testing.B) {
				var pps, allocs float64
				for j := 0; j < b.N; j++ {
					r, err := Lifecycle(engines()[i], n, boundFor(e))
					if err != nil {
						b.Fatal(err)
					}
					if !r.Complete {
						b.Logf("incomplete: %v", r)
					}
					pps += r.PodsPerSec
					allocs += r.AllocsPerPod
				}
				b.ReportMetric(pps/float64(b.N), "pods/s")
				b.ReportMetric(allocs/float64(b.N), "allocs/pod")
			})
		}
	}
}

// BenchmarkLifecycleAPIFloor: workload (a) on the fake API server and a
// pod informer alone (APIOnly): what virtual-kubelet's input costs before
// its controller does anything.
func BenchmarkLifecycleAPIFloor(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			var pps float64
			for j := 0; j < b.N; j++ {
				r, err := Lifecycle(&APIOnly{}, n, *bound)
				if err != nil || !r.Complete {
					b.Fatal(r, err)
				}
				pps += r.PodsPerSec
			}
			b.ReportMetric(pps/float64(b.N), "pods/s")
		})
	}
}

// BenchmarkMemory: workload (b), 10,000 synced idle pods. virtual-kubelet's
// figures are net of the fake API server and informer (APIOnly), measured
// in the same op.
func BenchmarkMemory(b *testing.B) {
	const n = 10000
	for i, e := range engines() {
		if vk, ok := e.(*VK); ok && !vk.Permissive {
			continue // 10,000 pods at 10 qps take 17 minutes to create
		}
		b.Run(fmt.Sprintf("engine=%s/pods=%d", engineKey(e), n), func(b *testing.B) {
			var m MemoryResult
			for j := 0; j < b.N; j++ {
				r, err := Memory(engines()[i], n, *bound)
				if err != nil {
					b.Fatal(err)
				}
				if _, ok := e.(*VK); ok {
					base, err := Memory(&APIOnly{}, n, *bound)
					if err != nil {
						b.Fatal(err)
					}
					r = r.Sub(base)
				}
				m.HeapPerPod += r.HeapPerPod / float64(b.N)
				m.StackPerPod += r.StackPerPod / float64(b.N)
				m.Goroutines = r.Goroutines
			}
			b.ReportMetric(m.PerPod(), "B/pod")
			b.ReportMetric(m.HeapPerPod, "heap-B/pod")
			b.ReportMetric(m.StackPerPod, "stack-B/pod")
			b.ReportMetric(float64(m.Goroutines), "goroutines")
		})
	}
}

// BenchmarkChurn: workload (c), -churn-cycles create/delete cycles with
// -churn-inflight pods in flight and 1% of provider create and delete calls
// failing. One op is a whole churn on a fresh engine.
func BenchmarkChurn(b *testing.B) {
	for i, e := range engines() {
		b.Run(fmt.Sprintf("engine=%s/cycles=%d", engineKey(e), *churnCycles), func(b *testing.B) {
			var cps, injected float64
			for j := 0; j < b.N; j++ {
				r, err := Churn(engines()[i], *churnCycles, *churnInFlight, 100, boundFor(e))
				if err != nil {
					b.Fatal(err)
				}
				if !r.Complete {
					b.Logf("incomplete: %v", r)
				}
				cps += r.CyclesPerSec
				injected += float64(r.Injected)
			}
			b.ReportMetric(cps/float64(b.N), "cycles/s")
			b.ReportMetric(injected/float64(b.N), "errors")
		})
	}
}
