package cri_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// Every CRI call is counted and timed under the kubelet's names and
// operation types; a failed one is counted as an error too.
func TestRuntimeOperationMetrics(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	reg := prometheus.NewPedanticRegistry()
	rt := newRuntime(t, ep, func(o *cri.Options) { o.Registerer = reg })
	ctx := ctxT(t)

	srv.FailNext("RunPodSandbox", codes.Unavailable)
	pod := testPod("web", v1.RestartPolicyAlways, v1.Container{Name: "c"})
	if err := rt.SyncPod(ctx, pod, podStatus(t, rt, pod)); err == nil {
		t.Fatal("SyncPod with RunPodSandbox failing: no error")
	}
	if err := rt.SyncPod(ctx, pod, podStatus(t, rt, pod)); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name, op string
		want     float64
	}{
		{"kubelet_runtime_operations_total", "run_podsandbox", 2},
		{"kubelet_runtime_operations_errors_total", "run_podsandbox", 1},
		{"kubelet_runtime_operations_duration_seconds", "run_podsandbox", 2},
		{"kubelet_runtime_operations_total", "create_container", 1},
		{"kubelet_runtime_operations_total", "start_container", 1},
		{"kubelet_runtime_operations_errors_total", "start_container", 0},
		{"kubelet_runtime_operations_total", "list_podsandbox", 2}, // the two podStatus reads
	} {
		if got := opCount(t, reg, c.name, c.op); got != c.want {
			t.Errorf("%s{operation_type=%q} = %v, want %v", c.name, c.op, got, c.want)
		}
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}

	// The same registry again: refused, all or nothing.
	if _, err := cri.New(cri.Options{Endpoint: ep, Registerer: reg, VolumeRoot: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "register metrics") {
		t.Fatalf("second runtime on the same registry: %v", err)
	}
}

// opCount is the value of the series of metric name with operation_type
// op in reg: a counter's value, a histogram's sample count, 0 if absent.
func opCount(t *testing.T, reg prometheus.Gatherer, name, op string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() != op {
				continue
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
