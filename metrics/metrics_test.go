package metrics_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/podlife/podlife/metrics"
)

// The pod workers accept any value with these two methods.
var _ interface {
	ObservePodWorkerDuration(operation string, d time.Duration)
	ObserveContainersPerPod(n int)
} = (*metrics.Metrics)(nil)

// podCountNames are the six metric families of kubelet #113145.
var podCountNames = []string{
	"kubelet_desired_pods",
	"kubelet_active_pods",
	"kubelet_mirror_pods",
	"kubelet_working_pods",
	"kubelet_restarted_pods_total",
	"kubelet_orphaned_runtime_pods_total",
}

func newMetrics(t *testing.T, opts metrics.Options) (*metrics.Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	if opts.Registerer == nil {
		opts.Registerer = reg
	}
	m, err := metrics.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m, reg
}

// housekeeping does what one full housekeeping pass of the agent does.
func housekeeping(t *testing.T, m *metrics.Metrics) {
	t.Helper()
	m.SetDesiredPods(false, 3)
	m.SetDesiredPods(true, 2)
	m.SetActivePods(false, 2)
	m.SetActivePods(true, 1)
	m.SetMirrorPods(1)
	m.AddRestartedPods(false, 0)
	m.AddRestartedPods(true, 1)
	m.AddOrphanedRuntimePods(2)
	counts := metrics.WorkingPodCounts{
		{Lifecycle: metrics.LifecycleSync, Config: metrics.ConfigDesired, Static: metrics.StaticFalse}:              2,
		{Lifecycle: metrics.LifecycleSync, Config: metrics.ConfigDesired, Static: metrics.StaticTrue}:               1,
		{Lifecycle: metrics.LifecycleTerminating, Config: metrics.ConfigOrphan, Static: metrics.StaticFalse}:        1,
		{Lifecycle: metrics.LifecycleTerminating, Config: metrics.ConfigRuntimeOnly, Static: metrics.StaticUnknown}: 2,
		{Lifecycle: metrics.LifecycleTerminated, Config: metrics.ConfigOrphan, Static: metrics.StaticTrue}:          1,
		{Lifecycle: metrics.LifecycleTerminated, Config: metrics.ConfigRuntimeOnly, Static: metrics.StaticUnknown}:  0,
		{Lifecycle: metrics.LifecycleTerminating, Config: metrics.ConfigDesired, Static: metrics.StaticFalse}:       0,
		{Lifecycle: metrics.LifecycleSync, Config: metrics.ConfigRuntimeOnly, Static: metrics.StaticUnknown}:        0,
		{Lifecycle: metrics.LifecycleTerminated, Config: metrics.ConfigDesired, Static: metrics.StaticFalse}:        0,
		{Lifecycle: metrics.LifecycleSync, Config: metrics.ConfigOrphan, Static: metrics.StaticTrue}:                0,
		{Lifecycle: metrics.LifecycleTerminating, Config: metrics.ConfigDesired, Static: metrics.StaticTrue}:        0,
		{Lifecycle: metrics.LifecycleTerminated, Config: metrics.ConfigDesired, Static: metrics.StaticTrue}:         0,
		{Lifecycle: metrics.LifecycleSync, Config: metrics.ConfigOrphan, Static: metrics.StaticFalse}:               0,
		{Lifecycle: metrics.LifecycleTerminating, Config: metrics.ConfigOrphan, Static: metrics.StaticTrue}:         0,
		{Lifecycle: metrics.LifecycleTerminated, Config: metrics.ConfigOrphan, Static: metrics.StaticFalse}:         0,
	}
	if err := m.SetWorkingPods(counts); err != nil {
		t.Fatalf("SetWorkingPods: %v", err)
	}
}

const helpText = `
# HELP kubelet_active_pods The number of pods the agent considers active, which are taken into account when admitting new pods. static is "true" for pods that do not come from the API server.
# TYPE kubelet_active_pods gauge
# HELP kubelet_desired_pods The number of pods the agent is instructed to run. static is "true" for pods that do not come from the API server.
# TYPE kubelet_desired_pods gauge
# HELP kubelet_mirror_pods The number of mirror pods the agent will try to create, one per admitted static pod.
# TYPE kubelet_mirror_pods gauge
# HELP kubelet_orphaned_runtime_pods_total The number of pods found in the container runtime that the pod workers did not already know. This usually means the agent restarted while a pod was being force deleted, which is unusual.
# TYPE kubelet_orphaned_runtime_pods_total counter
# HELP kubelet_restarted_pods_total The number of pods restarted because they were deleted and recreated with the same UID while the agent watched them (common for static pods, very rare for API pods).
# TYPE kubelet_restarted_pods_total counter
# HELP kubelet_working_pods The number of pods the pod workers actually run, by lifecycle phase (sync, terminating, terminated), by whether the pod is desired, orphaned (removed from the configuration or force deleted in the API) or known only to the runtime, and by whether it is static. Orphaned pods consume resources that are not visible elsewhere.
# TYPE kubelet_working_pods gauge
`

func TestNewCreatesAll23SeriesAtZero(t *testing.T) {
	_, reg := newMetrics(t, metrics.Options{})

	if n, err := testutil.GatherAndCount(reg, podCountNames...); err != nil || n != 23 {
		t.Fatalf("GatherAndCount = %d, %v; want 23 series", n, err)
	}
	want := helpText + `
kubelet_active_pods{static=""} 0
kubelet_active_pods{static="true"} 0
kubelet_desired_pods{static=""} 0
kubelet_desired_pods{static="true"} 0
kubelet_mirror_pods 0
kubelet_orphaned_runtime_pods_total 0
kubelet_restarted_pods_total{static=""} 0
kubelet_restarted_pods_total{static="true"} 0
kubelet_working_pods{config="desired",lifecycle="sync",static=""} 0
kubelet_working_pods{config="desired",lifecycle="sync",static="true"} 0
kubelet_working_pods{config="desired",lifecycle="terminated",static=""} 0
kubelet_working_pods{config="desired",lifecycle="terminated",static="true"} 0
kubelet_working_pods{config="desired",lifecycle="terminating",static=""} 0
kubelet_working_pods{config="desired",lifecycle="terminating",static="true"} 0
kubelet_working_pods{config="orphan",lifecycle="sync",static=""} 0
kubelet_working_pods{config="orphan",lifecycle="sync",static="true"} 0
kubelet_working_pods{config="orphan",lifecycle="terminated",static=""} 0
kubelet_working_pods{config="orphan",lifecycle="terminated",static="true"} 0
kubelet_working_pods{config="orphan",lifecycle="terminating",static=""} 0
kubelet_working_pods{config="orphan",lifecycle="terminating",static="true"} 0
kubelet_working_pods{config="runtime_only",lifecycle="sync",static="unknown"} 0
kubelet_working_pods{config="runtime_only",lifecycle="terminated",static="unknown"} 0
kubelet_working_pods{config="runtime_only",lifecycle="terminating",static="unknown"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), podCountNames...); err != nil {
		t.Fatal(err)
	}
}

func TestHousekeepingPassSetsAll23Series(t *testing.T) {
	m, reg := newMetrics(t, metrics.Options{})
	housekeeping(t, m)

	if n, err := testutil.GatherAndCount(reg, podCountNames...); err != nil || n != 23 {
		t.Fatalf("GatherAndCount = %d, %v; want 23 series", n, err)
	}
	want := helpText + `
kubelet_active_pods{static=""} 2
kubelet_active_pods{static="true"} 1
kubelet_desired_pods{static=""} 3
kubelet_desired_pods{static="true"} 2
kubelet_mirror_pods 1
kubelet_orphaned_runtime_pods_total 2
kubelet_restarted_pods_total{static=""} 0
kubelet_restarted_pods_total{static="true"} 1
kubelet_working_pods{config="desired",lifecycle="sync",static=""} 2
kubelet_working_pods{config="desired",lifecycle="sync",static="true"} 1
kubelet_working_pods{config="desired",lifecycle="terminated",static=""} 0
kubelet_working_pods{config="desired",lifecycle="terminated",static="true"} 0
kubelet_working_pods{config="desired",lifecycle="terminating",static=""} 0
kubelet_working_pods{config="desired",lifecycle="terminating",static="true"} 0
kubelet_working_pods{config="orphan",lifecycle="sync",static=""} 0
kubelet_working_pods{config="orphan",lifecycle="sync",static="true"} 0
kubelet_working_pods{config="orphan",lifecycle="terminated",static=""} 0
kubelet_working_pods{config="orphan",lifecycle="terminated",static="true"} 1
kubelet_working_pods{config="orphan",lifecycle="terminating",static=""} 1
kubelet_working_pods{config="orphan",lifecycle="terminating",static="true"} 0
kubelet_working_pods{config="runtime_only",lifecycle="sync",static="unknown"} 0
kubelet_working_pods{config="runtime_only",lifecycle="terminated",static="unknown"} 0
kubelet_working_pods{config="runtime_only",lifecycle="terminating",static="unknown"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), podCountNames...); err != nil {
		t.Fatal(err)
	}

}

func TestSetWorkingPodsZeroesMissingCombinations(t *testing.T) {
	m, reg := newMetrics(t, metrics.Options{})
	syncDesired := metrics.WorkingPodKey{Lifecycle: metrics.LifecycleSync, Config: metrics.ConfigDesired, Static: metrics.StaticFalse}
	termOrphan := metrics.WorkingPodKey{Lifecycle: metrics.LifecycleTerminating, Config: metrics.ConfigOrphan, Static: metrics.StaticFalse}

	if err := m.SetWorkingPods(metrics.WorkingPodCounts{syncDesired: 4}); err != nil {
		t.Fatal(err)
	}
	if err := m.SetWorkingPods(metrics.WorkingPodCounts{termOrphan: 1}); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP kubelet_working_pods The number of pods the pod workers actually run, by lifecycle phase (sync, terminating, terminated), by whether the pod is desired, orphaned (removed from the configuration or force deleted in the API) or known only to the runtime, and by whether it is static. Orphaned pods consume resources that are not visible elsewhere.
# TYPE kubelet_working_pods gauge
kubelet_working_pods{config="desired",lifecycle="sync",static=""} 0
kubelet_working_pods{config="desired",lifecycle="sync",static="true"} 0
kubelet_working_pods{config="desired",lifecycle="terminated",static=""} 0
kubelet_working_pods{config="desired",lifecycle="terminated",static="true"} 0
kubelet_working_pods{config="desired",lifecycle="terminating",static=""} 0
kubelet_working_pods{config="desired",lifecycle="terminating",static="true"} 0
kubelet_working_pods{config="orphan",lifecycle="sync",static=""} 0
kubelet_working_pods{config="orphan",lifecycle="sync",static="true"} 0
kubelet_working_pods{config="orphan",lifecycle="terminated",static=""} 0
kubelet_working_pods{config="orphan",lifecycle="terminated",static="true"} 0
kubelet_working_pods{config="orphan",lifecycle="terminating",static=""} 1
kubelet_working_pods{config="orphan",lifecycle="terminating",static="true"} 0
kubelet_working_pods{config="runtime_only",lifecycle="sync",static="unknown"} 0
kubelet_working_pods{config="runtime_only",lifecycle="terminated",static="unknown"} 0
kubelet_working_pods{config="runtime_only",lifecycle="terminating",static="unknown"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubelet_working_pods"); err != nil {
		t.Fatal(err)
	}

	// nil counts: everything back to zero.
	if err := m.SetWorkingPods(nil); err != nil {
		t.Fatal(err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(strings.Replace(want, "} 1", "} 0", 1)), "kubelet_working_pods"); err != nil {
		t.Fatal(err)
	}
}

func TestSetWorkingPodsRejectsInvalidCombinations(t *testing.T) {
	valid := metrics.WorkingPodKey{Lifecycle: metrics.LifecycleSync, Config: metrics.ConfigDesired, Static: metrics.StaticTrue}
	for _, tc := range []struct {
		name string
		key  metrics.WorkingPodKey
	}{
		{"runtime_only with a known source", metrics.WorkingPodKey{Lifecycle: metrics.LifecycleSync, Config: metrics.ConfigRuntimeOnly, Static: metrics.StaticFalse}},
		{"runtime_only static", metrics.WorkingPodKey{Lifecycle: metrics.LifecycleTerminating, Config: metrics.ConfigRuntimeOnly, Static: metrics.StaticTrue}},
		{"desired with unknown source", metrics.WorkingPodKey{Lifecycle: metrics.LifecycleSync, Config: metrics.ConfigDesired, Static: metrics.StaticUnknown}},
		{"orphan with unknown source", metrics.WorkingPodKey{Lifecycle: metrics.LifecycleTerminated, Config: metrics.ConfigOrphan, Static: metrics.StaticUnknown}},
		{"unknown lifecycle", metrics.WorkingPodKey{Lifecycle: "finished", Config: metrics.ConfigDesired, Static: metrics.StaticFalse}},
		{"unknown config", metrics.WorkingPodKey{Lifecycle: metrics.LifecycleSync, Config: "mirror", Static: metrics.StaticFalse}},
		{"unknown static", metrics.WorkingPodKey{Lifecycle: metrics.LifecycleSync, Config: metrics.ConfigDesired, Static: "false"}},
		{"zero key", metrics.WorkingPodKey{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, reg := newMetrics(t, metrics.Options{})
			err := m.SetWorkingPods(metrics.WorkingPodCounts{valid: 3, tc.key: 7})
			var invalid *metrics.InvalidWorkingPodKeyError
			if !errors.As(err, &invalid) {
				t.Fatalf("SetWorkingPods = %v, want an *InvalidWorkingPodKeyError", err)
			}
			if len(invalid.Keys) != 1 || invalid.Keys[0] != tc.key {
				t.Errorf("error keys = %v, want [%v]", invalid.Keys, tc.key)
			}
			// The valid combinations are still set, and no stray series appears.
			if n, err := testutil.GatherAndCount(reg, "kubelet_working_pods"); err != nil || n != 15 {
				t.Errorf("GatherAndCount = %d, %v; want 15", n, err)
			}
			sum := 0.0
			families, _ := reg.Gather()
			for _, mf := range families {
				if mf.GetName() == "kubelet_working_pods" {
					for _, s := range mf.GetMetric() {
						sum += s.GetGauge().GetValue()
					}
				}
			}
			if sum != 3 {
				t.Errorf("sum of working_pods = %v, want 3 (only the valid key)", sum)
			}
		})
	}
}

func TestCountersNeverDecrease(t *testing.T) {
	m, reg := newMetrics(t, metrics.Options{})
	m.AddRestartedPods(true, 2)
	m.AddRestartedPods(true, -5) // a caller bug must not panic or go down
	m.AddRestartedPods(false, 0)
	m.AddOrphanedRuntimePods(1)
	m.AddOrphanedRuntimePods(-1)
	want := `
# HELP kubelet_orphaned_runtime_pods_total The number of pods found in the container runtime that the pod workers did not already know. This usually means the agent restarted while a pod was being force deleted, which is unusual.
# TYPE kubelet_orphaned_runtime_pods_total counter
kubelet_orphaned_runtime_pods_total 1
# HELP kubelet_restarted_pods_total The number of pods restarted because they were deleted and recreated with the same UID while the agent watched them (common for static pods, very rare for API pods).
# TYPE kubelet_restarted_pods_total counter
kubelet_restarted_pods_total{static=""} 0
kubelet_restarted_pods_total{static="true"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubelet_restarted_pods_total", "kubelet_orphaned_runtime_pods_total"); err != nil {
		t.Fatal(err)
	}
}

func TestHistograms(t *testing.T) {
	m, reg := newMetrics(t, metrics.Options{})
	m.ObservePodWorkerDuration(metrics.OperationCreate, 20*time.Millisecond)
	m.ObservePodWorkerDuration(metrics.OperationCreate, 3*time.Second)
	m.ObservePodWorkerDuration(metrics.OperationTerminated, 0)
	m.ObservePodWorkerDuration("Create", time.Second)            // not a known operation
	m.ObservePodWorkerDuration("pod-7f3a/whatever", time.Second) // would otherwise be a new series
	m.ObservePodWorkerStartDuration(750 * time.Millisecond)
	for _, n := range []int{1, 1, 3, 16, 40} {
		m.ObserveContainersPerPod(n)
	}

	want := `
# HELP kubelet_containers_per_pod_count The number of containers per pod, observed when a pod first starts.
# TYPE kubelet_containers_per_pod_count histogram
kubelet_containers_per_pod_count_bucket{le="1"} 2
kubelet_containers_per_pod_count_bucket{le="2"} 2
kubelet_containers_per_pod_count_bucket{le="4"} 3
kubelet_containers_per_pod_count_bucket{le="8"} 3
kubelet_containers_per_pod_count_bucket{le="16"} 4
kubelet_containers_per_pod_count_bucket{le="+Inf"} 5
kubelet_containers_per_pod_count_sum 61
kubelet_containers_per_pod_count_count 5
# HELP kubelet_pod_worker_duration_seconds Duration in seconds to sync a single pod, by operation type: create, update, sync, kill or terminated.
# TYPE kubelet_pod_worker_duration_seconds histogram
kubelet_pod_worker_duration_seconds_bucket{operation_type="create",le="0.005"} 0
kubelet_pod_worker_duration_seconds_bucket{operation_type="create",le="0.01"} 0
kubelet_pod_worker_duration_seconds_bucket{operation_type="create",le="0.025"} 1
kubelet_pod_worker_duration_seconds_bucket{operation_type="create",le="0.05"} 1
kubelet_pod_worker_duration_seconds_bucket{operation_type="create",le="0.1"} 1
kubelet_pod_worker_duration_seconds_bucket{operation_type="create",le="0.25"} 1
kubelet_pod_worker_duration_seconds_bucket{operation_type="create",le="0.5"} 1
kubelet_pod_worker_duration_seconds_bucket{operation_type="create",le="1"} 1
kubelet_pod_worker_duration_seconds_bucket{operation_type="create",le="2.5"} 1
kubelet_pod_worker_duration_seconds_bucket{operation_type="create",le="5"} 2
kubelet_pod_worker_duration_seconds_bucket{operation_type="create",le="10"} 2
kubelet_pod_worker_duration_seconds_bucket{operation_type="create",le="+Inf"} 2
kubelet_pod_worker_duration_seconds_sum{operation_type="create"} 3.02
kubelet_pod_worker_duration_seconds_count{operation_type="create"} 2
kubelet_pod_worker_duration_seconds_bucket{operation_type="terminated",le="0.005"} 1
kubelet_pod_worker_duration_seconds_bucket{operation_type="terminated",le="0.01"} 1
kubelet_pod_worker_duration_seconds_bucket{operation_type="terminated",le="0.025"} 1
kubelet_pod_worker_duration_seconds_bucket{operation_type="terminated",le="0.05"} 1
kubelet_pod_worker_duration_seconds_bucket{operation_type="terminated",le="0.1"} 1
kubelet_pod_worker_duration_seconds_bucket{operation_type="terminated",le="0.25"} 1
kubelet_pod_worker_duration_seconds_bucket{operation_type="terminated",le="0.5"} 1
kubelet_pod_worker_duration_seconds_bucket{operation_type="terminated",le="1"} 1
kubelet_pod_worker_duration_seconds_bucket{operation_type="terminated",le="2.5"} 1
kubelet_pod_worker_duration_seconds_bucket{operation_type="terminated",le="5"} 1
kubelet_pod_worker_duration_seconds_bucket{operation_type="terminated",le="10"} 1
kubelet_pod_worker_duration_seconds_bucket{operation_type="terminated",le="+Inf"} 1
kubelet_pod_worker_duration_seconds_sum{operation_type="terminated"} 0
kubelet_pod_worker_duration_seconds_count{operation_type="terminated"} 1
kubelet_pod_worker_duration_seconds_bucket{operation_type="unknown",le="0.005"} 0
kubelet_pod_worker_duration_seconds_bucket{operation_type="unknown",le="0.01"} 0
kubelet_pod_worker_duration_seconds_bucket{operation_type="unknown",le="0.025"} 0
kubelet_pod_worker_duration_seconds_bucket{operation_type="unknown",le="0.05"} 0
kubelet_pod_worker_duration_seconds_bucket{operation_type="unknown",le="0.1"} 0
kubelet_pod_worker_duration_seconds_bucket{operation_type="unknown",le="0.25"} 0
kubelet_pod_worker_duration_seconds_bucket{operation_type="unknown",le="0.5"} 0
kubelet_pod_worker_duration_seconds_bucket{operation_type="unknown",le="1"} 2
kubelet_pod_worker_duration_seconds_bucket{operation_type="unknown",le="2.5"} 2
kubelet_pod_worker_duration_seconds_bucket{operation_type="unknown",le="5"} 2
kubelet_pod_worker_duration_seconds_bucket{operation_type="unknown",le="10"} 2
kubelet_pod_worker_duration_seconds_bucket{operation_type="unknown",le="+Inf"} 2
kubelet_pod_worker_duration_seconds_sum{operation_type="unknown"} 2
kubelet_pod_worker_duration_seconds_count{operation_type="unknown"} 2
# HELP kubelet_pod_worker_start_duration_seconds Duration in seconds from the agent first seeing a pod to its pod worker starting.
# TYPE kubelet_pod_worker_start_duration_seconds histogram
kubelet_pod_worker_start_duration_seconds_bucket{le="0.005"} 0
kubelet_pod_worker_start_duration_seconds_bucket{le="0.01"} 0
kubelet_pod_worker_start_duration_seconds_bucket{le="0.025"} 0
kubelet_pod_worker_start_duration_seconds_bucket{le="0.05"} 0
kubelet_pod_worker_start_duration_seconds_bucket{le="0.1"} 0
kubelet_pod_worker_start_duration_seconds_bucket{le="0.25"} 0
kubelet_pod_worker_start_duration_seconds_bucket{le="0.5"} 0
kubelet_pod_worker_start_duration_seconds_bucket{le="1"} 1
kubelet_pod_worker_start_duration_seconds_bucket{le="2.5"} 1
kubelet_pod_worker_start_duration_seconds_bucket{le="5"} 1
kubelet_pod_worker_start_duration_seconds_bucket{le="10"} 1
kubelet_pod_worker_start_duration_seconds_bucket{le="+Inf"} 1
kubelet_pod_worker_start_duration_seconds_sum 0.75
kubelet_pod_worker_start_duration_seconds_count 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"kubelet_containers_per_pod_count", "kubelet_pod_worker_duration_seconds", "kubelet_pod_worker_start_duration_seconds"); err != nil {
		t.Fatal(err)
	}
}

func TestHistogramsExistBeforeFirstObservation(t *testing.T) {
	_, reg := newMetrics(t, metrics.Options{})
	// The label-less histograms are exported (empty) from the start; the
	// duration histogram gets a series per operation_type on first use.
	for _, tc := range []struct {
		name string
		want int
	}{
		{"kubelet_pod_worker_start_duration_seconds", 1},
		{"kubelet_containers_per_pod_count", 1},
		{"kubelet_pod_worker_duration_seconds", 0},
	} {
		if n, err := testutil.GatherAndCount(reg, tc.name); err != nil || n != tc.want {
			t.Errorf("%s: GatherAndCount = %d, %v; want %d", tc.name, n, err, tc.want)
		}
	}
}

func TestLintClean(t *testing.T) {
	m, reg := newMetrics(t, metrics.Options{})
	housekeeping(t, m)
	for _, op := range []string{metrics.OperationCreate, metrics.OperationUpdate, metrics.OperationSync, metrics.OperationKill, metrics.OperationTerminated, "bogus"} {
		m.ObservePodWorkerDuration(op, time.Millisecond)
	}
	m.ObservePodWorkerStartDuration(time.Millisecond)
	m.ObserveContainersPerPod(2)

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(families) != 9 {
		t.Errorf("gathered %d families, want 9", len(families))
	}
	problems, err := promlint.NewWithMetricFamilies(families).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	// The same through the testutil helper.
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) != 0 {
		t.Errorf("GatherAndLint = %v, %v", problems, err)
	}
}

func TestTwoMetricsOnTwoRegistriesDoNotInterfere(t *testing.T) {
	a, regA := newMetrics(t, metrics.Options{})
	b, regB := newMetrics(t, metrics.Options{})

	a.SetMirrorPods(5)
	a.AddOrphanedRuntimePods(3)
	b.SetMirrorPods(1)
	a.ObserveContainersPerPod(4)

	for _, tc := range []struct {
		name string
		reg  *prometheus.Registry
		want string
	}{
		{"a", regA, "kubelet_mirror_pods 5\nkubelet_orphaned_runtime_pods_total 3\n"},
		{"b", regB, "kubelet_mirror_pods 1\nkubelet_orphaned_runtime_pods_total 0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := strings.SplitN(tc.want, "\n", 3)
			want := `
# HELP kubelet_mirror_pods The number of mirror pods the agent will try to create, one per admitted static pod.
# TYPE kubelet_mirror_pods gauge
` + lines[0] + `
# HELP kubelet_orphaned_runtime_pods_total The number of pods found in the container runtime that the pod workers did not already know. This usually means the agent restarted while a pod was being force deleted, which is unusual.
# TYPE kubelet_orphaned_runtime_pods_total counter
` + lines[1] + "\n"
			if err := testutil.GatherAndCompare(tc.reg, strings.NewReader(want), "kubelet_mirror_pods", "kubelet_orphaned_runtime_pods_total"); err != nil {
				t.Error(err)
			}
		})
	}
	if got := containersCount(t, regB); got != 0 {
		t.Errorf("b containers_per_pod_count observations = %d, want 0", got)
	}
	if got := containersCount(t, regA); got != 1 {
		t.Errorf("a containers_per_pod_count observations = %d, want 1", got)
	}
}

func containersCount(t *testing.T, reg *prometheus.Registry) uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() == "kubelet_containers_per_pod_count" {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatal("no kubelet_containers_per_pod_count")
	return 0
}

func TestCustomNamespace(t *testing.T) {
	m, reg := newMetrics(t, metrics.Options{Namespace: "edgeagent"})
	housekeeping(t, m)
	m.ObservePodWorkerDuration(metrics.OperationSync, time.Millisecond)

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range families {
		names = append(names, mf.GetName())
	}
	want := []string{
		"edgeagent_active_pods",
		"edgeagent_containers_per_pod_count",
		"edgeagent_desired_pods",
		"edgeagent_mirror_pods",
		"edgeagent_orphaned_runtime_pods_total",
		"edgeagent_pod_worker_duration_seconds",
		"edgeagent_pod_worker_start_duration_seconds",
		"edgeagent_restarted_pods_total",
		"edgeagent_working_pods",
	}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("families = %v, want %v", names, want)
	}
	var six []string
	for _, n := range podCountNames {
		six = append(six, strings.Replace(n, "kubelet_", "edgeagent_", 1))
	}
	if n, err := testutil.GatherAndCount(reg, six...); err != nil || n != 23 {
		t.Errorf("GatherAndCount = %d, %v; want 23", n, err)
	}
	// The default namespace can live beside it in the same registry.
	if _, err := metrics.New(metrics.Options{Registerer: reg}); err != nil {
		t.Errorf("New with the default namespace beside %q: %v", "edgeagent", err)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts metrics.Options
	}{
		{"nil registerer", metrics.Options{}},
		{"nil registerer with namespace", metrics.Options{Namespace: "x"}},
		{"namespace with a dash", metrics.Options{Registerer: prometheus.NewRegistry(), Namespace: "my-agent"}},
		{"namespace with a colon", metrics.Options{Registerer: prometheus.NewRegistry(), Namespace: "my:agent"}},
		{"namespace starting with a digit", metrics.Options{Registerer: prometheus.NewRegistry(), Namespace: "1agent"}},
		{"namespace with a space", metrics.Options{Registerer: prometheus.NewRegistry(), Namespace: "my agent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := metrics.New(tc.opts)
			if err == nil || m != nil {
				t.Fatalf("New = %v, %v; want nil and an error", m, err)
			}
		})
	}
}

func TestNewTwiceOnOneRegistry(t *testing.T) {
	first, reg := newMetrics(t, metrics.Options{})
	first.SetMirrorPods(2)

	second, err := metrics.New(metrics.Options{Registerer: reg})
	var already prometheus.AlreadyRegisteredError
	if !errors.As(err, &already) || second != nil {
		t.Fatalf("second New = %v, %v; want an AlreadyRegisteredError", second, err)
	}
	// The failed New left the first set registered and working.
	first.SetMirrorPods(3)
	if n, err := testutil.GatherAndCount(reg, podCountNames...); err != nil || n != 23 {
		t.Errorf("GatherAndCount = %d, %v; want 23", n, err)
	}
	want := `
# HELP kubelet_mirror_pods The number of mirror pods the agent will try to create, one per admitted static pod.
# TYPE kubelet_mirror_pods gauge
kubelet_mirror_pods 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubelet_mirror_pods"); err != nil {
		t.Error(err)
	}
}

func TestUnregisterAllowsAFreshSet(t *testing.T) {
	first, reg := newMetrics(t, metrics.Options{})
	first.SetMirrorPods(7)
	if !first.Unregister() {
		t.Fatal("Unregister = false, want true")
	}
	if first.Unregister() {
		t.Error("second Unregister = true, want false")
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
		t.Errorf("after Unregister: GatherAndCount = %d, %v; want 0", n, err)
	}
	second, err := metrics.New(metrics.Options{Registerer: reg})
	if err != nil {
		t.Fatalf("New after Unregister: %v", err)
	}
	second.SetMirrorPods(1)
	first.SetMirrorPods(9) // no longer exported
	if n, err := testutil.GatherAndCount(reg, podCountNames...); err != nil || n != 23 {
		t.Errorf("GatherAndCount = %d, %v; want 23", n, err)
	}
}

func TestNilMetricsDoesNothing(t *testing.T) {
	var m *metrics.Metrics
	m.SetDesiredPods(true, 1)
	m.SetActivePods(false, 1)
	m.SetMirrorPods(1)
	m.AddRestartedPods(true, 1)
	m.AddOrphanedRuntimePods(1)
	m.ObservePodWorkerDuration(metrics.OperationSync, time.Second)
	m.ObservePodWorkerStartDuration(time.Second)
	m.ObserveContainersPerPod(1)
	if m.Unregister() {
		t.Error("Unregister on nil = true")
	}
	if err := m.SetWorkingPods(metrics.WorkingPodCounts{}); err != nil {
		t.Errorf("SetWorkingPods on nil = %v", err)
	}
	var invalid *metrics.InvalidWorkingPodKeyError
	if err := m.SetWorkingPods(metrics.WorkingPodCounts{{}: 1}); !errors.As(err, &invalid) {
		t.Errorf("SetWorkingPods on nil with a bad key = %v, want an *InvalidWorkingPodKeyError", err)
	}
}

func TestConcurrentUseAndScrape(t *testing.T) {
	m, reg := newMetrics(t, metrics.Options{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 200 {
				housekeeping(t, m)
				m.ObservePodWorkerDuration(metrics.OperationSync, time.Duration(j)*time.Millisecond)
				m.ObserveContainersPerPod(i + 1)
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			if _, err := reg.Gather(); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	if n, err := testutil.GatherAndCount(reg, podCountNames...); err != nil || n != 23 {
		t.Errorf("GatherAndCount = %d, %v; want 23", n, err)
	}
}
