package metrics_test

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podlife/podlife/metrics"
)

func Example() {
	reg := prometheus.NewRegistry() // serve it with promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	m, err := metrics.New(metrics.Options{Registerer: reg})
	if err != nil {
		fmt.Println(err)
		return
	}

	// One housekeeping pass: two API pods and one static pod desired and
	// active, one mirror pod, and the pod workers' view of them.
	m.SetDesiredPods(false, 2)
	m.SetDesiredPods(true, 1)
	m.SetActivePods(false, 2)
	m.SetActivePods(true, 1)
	m.SetMirrorPods(1)
	m.AddRestartedPods(false, 0)
	m.AddRestartedPods(true, 0)
	m.AddOrphanedRuntimePods(0)
	counts := metrics.WorkingPodCounts{}
	counts.Inc(metrics.WorkingPodKeyFor(metrics.LifecycleSync, false, true, false))
	counts.Inc(metrics.WorkingPodKeyFor(metrics.LifecycleSync, false, true, true))
	counts.Inc(metrics.WorkingPodKeyFor(metrics.LifecycleTerminating, true, true, false))
	if err := m.SetWorkingPods(counts); err != nil {
		fmt.Println(err)
		return
	}

	// What the pod workers report.
	m.ObservePodWorkerDuration(metrics.OperationCreate, 120*time.Millisecond)
	m.ObserveContainersPerPod(2)
	m.ObservePodWorkerStartDuration(5 * time.Millisecond)

	families, err := reg.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, mf := range families {
		fmt.Println(mf.GetName(), len(mf.GetMetric()))
	}
	// Output:
	// kubelet_active_pods 2
	// kubelet_containers_per_pod_count 1
	// kubelet_desired_pods 2
	// kubelet_mirror_pods 1
	// kubelet_orphaned_runtime_pods_total 1
	// kubelet_pod_worker_duration_seconds 1
	// kubelet_pod_worker_start_duration_seconds 1
	// kubelet_restarted_pods_total 2
	// kubelet_working_pods 15
}
