package status

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// BenchmarkReconcile measures one full reconcile pass over 10,000 pods
// whose statuses are all written (the common case: nothing to do).
func BenchmarkReconcile(b *testing.B) {
	m, err := New(Options{Client: fake.NewClientset(), PodStates: &podStates{}})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10000 {
		pod := testPod(fmt.Sprint("p", i), types.UID(fmt.Sprint("uid-", i)))
		_ = m.SetPodStatus(context.Background(), pod, nil, running("up"))
		e := m.pods[pod.UID]
		s := snapshot{pod: pod, status: e.status}
		written := desiredStatus(s, pod.Status, false)
		resp := pod.DeepCopy()
		resp.Status = written
		e.queued, e.written, e.lastResponse, e.writtenVersion = false, &written, resp, e.version
	}
	m.queue = nil
	b.ReportAllocs()
	for b.Loop() {
		m.reconcile()
	}
	if n := len(m.queue); n != 0 {
		b.Fatalf("reconcile queued %d pods", n)
	}
}
