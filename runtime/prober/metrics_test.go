package prober_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestMetrics(t *testing.T) {
	h := newHarness(t)
	pod := podWith("m", v1.Container{Name: "c",
		LivenessProbe: execProbe("live", func(p *v1.Probe) { p.PeriodSeconds = 1 }),
		// A port that does not exist: the probe cannot run, its outcome is
		// unknown, and it publishes nothing.
		ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromString("none")}}},
	})
	h.m.SetContainers(pod, "127.0.0.1", running("id1", t0))
	h.probe("live", t0, 0)
	h.stepTo(t0.Add(sec(1)))
	h.probe("live", t0.Add(sec(1)), 1)
	h.stepTo(t0.Add(sec(2)))
	h.call("live", t0.Add(sec(2))) // the two before are counted
	eventually(t, "the readiness probe to run", func() bool {
		return counterValue(t, h, "Readiness", "unknown") == 1
	})
	want := `
# HELP prober_probe_total Cumulative number of liveness, readiness or startup probes of a container, by result.
# TYPE prober_probe_total counter
prober_probe_total{container="c",namespace="ns",pod="m",pod_uid="uid-m",probe_type="Liveness",result="failed"} 1
prober_probe_total{container="c",namespace="ns",pod="m",pod_uid="uid-m",probe_type="Liveness",result="successful"} 1
prober_probe_total{container="c",namespace="ns",pod="m",pod_uid="uid-m",probe_type="Liveness",result="unknown"} 0
prober_probe_total{container="c",namespace="ns",pod="m",pod_uid="uid-m",probe_type="Readiness",result="failed"} 0
prober_probe_total{container="c",namespace="ns",pod="m",pod_uid="uid-m",probe_type="Readiness",result="successful"} 0
prober_probe_total{container="c",namespace="ns",pod="m",pod_uid="uid-m",probe_type="Readiness",result="unknown"} 1
`
	if err := testutil.GatherAndCompare(h.reg, strings.NewReader(want), "prober_probe_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(h.reg, "prober_probe_duration_seconds"); n != 2 {
		t.Fatalf("%d duration series, want 2", n)
	}
	if r, _ := h.m.Readiness(pod.UID, "c"); r {
		t.Fatal("ready with a probe that cannot run")
	}
	h.noUpdate()
	problems, err := promlint.NewWithMetricFamilies(mustGather(t, h)).Lint()
	if err != nil || len(problems) != 0 {
		t.Fatalf("promlint: %v %v", problems, err)
	}
	h.m.RemovePod(pod.UID)
	if n := testutil.CollectAndCount(h.reg); n != 0 {
		t.Fatalf("%d series left after RemovePod", n)
	}
}
