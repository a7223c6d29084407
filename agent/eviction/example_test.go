package eviction_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/podlife/podlife/agent/eviction"
)

// node is a node that is short of memory: 50Mi available of 4Gi.
type node struct{ pods []statsapi.PodStats }

func (node) NodeStats(context.Context) (*statsapi.NodeStats, error) {
	avail, ws := uint64(50<<20), uint64(4<<30-50<<20)
	return &statsapi.NodeStats{Memory: &statsapi.MemoryStats{AvailableBytes: &avail, WorkingSetBytes: &ws}}, nil
}

func (n node) ListPodStats(context.Context) ([]statsapi.PodStats, error) { return n.pods, nil }

func Example() {
	ws := uint64(300 << 20)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "greedy", Namespace: "default", UID: "u1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	n := node{pods: []statsapi.PodStats{{
		PodRef:     statsapi.PodReference{UID: "u1"},
		Memory:     &statsapi.MemoryStats{WorkingSetBytes: &ws},
		Containers: []statsapi.ContainerStats{{Name: "app", Memory: &statsapi.MemoryStats{WorkingSetBytes: &ws}}},
	}}}
	m, err := eviction.New(eviction.Options{
		NodeStats:  n,
		PodStats:   n,
		ActivePods: func() []*v1.Pod { return []*v1.Pod{pod} },
		Evict: func(ctx context.Context, p *v1.Pod, e eviction.Eviction) error {
			var st v1.PodStatus
			e.Apply(&st)
			fmt.Printf("evict %s (grace %ds): %s %s\n%q\n", p.Name, e.GracePeriodSeconds, st.Phase, st.Reason, st.Message)
			return nil
		},
	})
	if err != nil {
		panic(err)
	}
	if _, err := m.Synchronize(context.Background()); err != nil {
		panic(err)
	}
	fmt.Println("conditions:", m.Conditions())
	ok, reason, message := m.Admit(&v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}})
	fmt.Printf("admit a BestEffort pod: %v %s %q\n", ok, reason, message)
	// Output:
	// evict greedy (grace 1s): Failed Evicted
	// "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container app was using 300Mi, request is 0, has larger consumption of memory. "
	// conditions: [MemoryPressure]
	// admit a BestEffort pod: false Evicted "The node had condition: [MemoryPressure]. "
}
