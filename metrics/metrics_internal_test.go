package metrics

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func newTestMetrics(t *testing.T) *Metrics {
	t.Helper()
	m, err := New(Options{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

func TestSettersReachTheirSeries(t *testing.T) {
	m := newTestMetrics(t)
	m.SetDesiredPods(false, 3)
	m.SetDesiredPods(true, 2)
	m.SetActivePods(false, 1)
	m.SetActivePods(true, 4)
	m.SetMirrorPods(2)
	for range 2 {
		m.AddRestartedPods(true, 1)
		m.AddRestartedPods(false, 0)
		m.AddOrphanedRuntimePods(3)
	}
	if err := m.SetWorkingPods(WorkingPodCounts{
		WorkingPodKeyFor(LifecycleTerminating, true, false, true): 5,
	}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		c    prometheus.Collector
		want float64
	}{
		{"desired api", m.desiredPods.WithLabelValues(StaticFalse), 3},
		{"desired static", m.desiredPods.WithLabelValues(StaticTrue), 2},
		{"active api", m.activePods.WithLabelValues(StaticFalse), 1},
		{"active static", m.activePods.WithLabelValues(StaticTrue), 4},
		{"mirror", m.mirrorPods, 2},
		{"restarted static", m.restartedPods.WithLabelValues(StaticTrue), 2},
		{"restarted api", m.restartedPods.WithLabelValues(StaticFalse), 0},
		{"orphaned runtime", m.orphanedRuntimePods, 6},
		{"working runtime_only terminating", m.workingPods.WithLabelValues(LifecycleTerminating, ConfigRuntimeOnly, StaticUnknown), 5},
		{"working desired sync", m.workingPods.WithLabelValues(LifecycleSync, ConfigDesired, StaticFalse), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := testutil.ToFloat64(tc.c); got != tc.want {
				t.Errorf("value = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCollectAndCompareDesiredPods(t *testing.T) {
	m := newTestMetrics(t)
	m.SetDesiredPods(true, 1)
	want := `
# HELP kubelet_desired_pods The number of pods the agent is instructed to run. static is "true" for pods that do not come from the API server.
# TYPE kubelet_desired_pods gauge
kubelet_desired_pods{static=""} 0
kubelet_desired_pods{static="true"} 1
`
	if err := testutil.CollectAndCompare(m.desiredPods, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	// All nine metrics are collected through the one registered collector.
	if n := testutil.CollectAndCount(m.all); n != 23+2 {
		t.Errorf("CollectAndCount(all) = %d, want 25 (23 pod-count series and 2 label-less histograms)", n)
	}
}

func TestConcurrentObserversAreCounted(t *testing.T) {
	m := newTestMetrics(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 250 {
				m.AddOrphanedRuntimePods(1)
				m.ObserveContainersPerPod(1)
				m.ObservePodWorkerDuration(OperationKill, time.Millisecond)
			}
		})
	}
	wg.Wait()
	if got := testutil.ToFloat64(m.orphanedRuntimePods); got != 1000 {
		t.Errorf("orphaned_runtime_pods_total = %v, want 1000", got)
	}
	if got := testutil.CollectAndCount(m.podWorkerDuration); got != 1 {
		t.Errorf("pod_worker_duration_seconds series = %d, want 1", got)
	}
}
