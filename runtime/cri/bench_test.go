package cri_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// benchPods fills a fakecri server on a unix socket with n pods of two
// containers each.
func benchPods(b *testing.B, n int) (*fakecri.Server, string) {
	b.Helper()
	srv, ep := startFake(b, fakecri.Options{Images: []string{testImage}})
	rt := newRuntime(b, ep)
	ctx := context.Background()
	for i := range n {
		pod := testPod(fmt.Sprintf("p%04d", i), v1.RestartPolicyAlways, v1.Container{Name: "a"}, v1.Container{Name: "b"})
		if err := rt.SyncPod(ctx, pod, nil); err != nil {
			b.Fatal(err)
		}
	}
	return srv, ep
}

// BenchmarkGetPods lists 1,000 pods (1,000 sandboxes, 2,000 containers) over
// a unix socket.
func BenchmarkGetPods(b *testing.B) {
	srv, ep := benchPods(b, 1000)
	ctx := context.Background()
	for _, tr := range transports {
		b.Run("transport="+tr.name, func(b *testing.B) {
			rt := newRuntime(b, ep, tr.conn(srv))
			b.ReportAllocs()
			for b.Loop() {
				pods, err := rt.GetPods(ctx, true)
				if err != nil || len(pods) != 1000 {
					b.Fatalf("%d pods, %v", len(pods), err)
				}
			}
		})
	}
}

// BenchmarkGetPodStatus reads one pod's status among 1,000 (two filtered
// lists, one sandbox status, two container statuses).
func BenchmarkGetPodStatus(b *testing.B) {
	srv, ep := benchPods(b, 1000)
	ctx := context.Background()
	pod := testPod("p0500", v1.RestartPolicyAlways)
	for _, tr := range transports {
		b.Run("transport="+tr.name, func(b *testing.B) {
			rt := newRuntime(b, ep, tr.conn(srv))
			b.ReportAllocs()
			for b.Loop() {
				st, err := rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
				if err != nil || len(st.ContainerStatuses) != 2 {
					b.Fatalf("%v, %v", st, err)
				}
			}
		})
	}
}

// transports are the two ways to reach fakecri: gRPC over its unix
// socket, and its Conn (no transport).
var transports = []struct {
	name string
	conn func(*fakecri.Server) func(*cri.Options)
}{
	{"socket", func(*fakecri.Server) func(*cri.Options) { return func(*cri.Options) {} }},
	{"conn", func(s *fakecri.Server) func(*cri.Options) { return func(o *cri.Options) { o.Conn = s.Conn() } }},
}

// BenchmarkRelistInspect: one relist that finds all of 1,000 pods changed
// (a fresh relister) and reads their statuses, with RelisterOptions.Workers
// status reads at once, over fakecri without and with 1ms of latency per
// ListPodSandbox call (a real runtime answers in about that time).
func BenchmarkRelistInspect(b *testing.B) {
	srv, ep := benchPods(b, 1000)
	rt := newRuntime(b, ep)
	ctx := context.Background()
	for _, latency := range []time.Duration{0, time.Millisecond} {
		for _, workers := range []int{1, 8} {
			b.Run(fmt.Sprintf("latency=%s/workers=%d", latency, workers), func(b *testing.B) {
				if latency > 0 {
					defer srv.Delay("ListPodSandbox", latency)()
				}
				b.ReportAllocs()
				for b.Loop() {
					r, err := runtime.NewRelister(runtime.RelisterOptions{Runtime: rt, Cache: runtime.NewCache(), Workers: workers})
					if err != nil {
						b.Fatal(err)
					}
					if err := r.ForceRefresh(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
