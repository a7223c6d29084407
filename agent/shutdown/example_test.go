package shutdown_test

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/agent/shutdown"
)

// Three pods of three priorities, stopped lowest priority first; each gets
// its group's grace period, or its own when shorter.
func Example() {
	prio := func(p int32) *int32 { return &p }
	grace := int64(5)
	pods := []*v1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "dns"}, Spec: v1.PodSpec{Priority: prio(shutdown.SystemCriticalPriority)}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: v1.PodSpec{TerminationGracePeriodSeconds: &grace}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"}, Spec: v1.PodSpec{Priority: prio(1000)}},
	}
	var mu sync.Mutex
	m, err := shutdown.New(shutdown.Options{
		ShutdownGracePeriodByPodPriority: []shutdown.PriorityGracePeriod{
			{Priority: 0, ShutdownGracePeriodSeconds: 20},
			{Priority: 1000, ShutdownGracePeriodSeconds: 30},
			{Priority: shutdown.SystemCriticalPriority, ShutdownGracePeriodSeconds: 10},
		},
		ActivePods: func() []*v1.Pod { return pods },
		KillPod: func(ctx context.Context, pod *v1.Pod, gracePeriod int64, statusFn func(*v1.PodStatus)) error {
			st := v1.PodStatus{Phase: v1.PodRunning}
			statusFn(&st) // what the pod's status says once stopped
			mu.Lock()
			defer mu.Unlock()
			fmt.Printf("%s/%s stopped (grace period %ds): %s %s\n", pod.Namespace, pod.Name, gracePeriod, st.Phase, st.Reason)
			return nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := m.Shutdown(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	_, reason, _ := m.AdmitPod(&v1.Pod{})
	fmt.Printf("stopped %d of %d pods within %s; new pods refused: %s\n", res.Stopped, res.Pods, m.Budget(), reason)
	// Output:
	// default/web stopped (grace period 5s): Failed Terminated
	// default/db stopped (grace period 30s): Failed Terminated
	// kube-system/dns stopped (grace period 10s): Failed Terminated
	// stopped 3 of 3 pods within 1m0s; new pods refused: NodeShutdown
}
