package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/podlife/podlife/bench"
)

func TestPrintMedians(t *testing.T) {
	r := func(vols bench.ClusterVolumes, running time.Duration, tokens int) row {
		return row{engine: "podlife", vols: vols, load: "1.50 1.00 0.80",
			res:    bench.ClusterResult{Pods: 10, Running: 10, Gone: 10, ToRunning: running, ToGone: 2 * time.Second},
			engReq: 40, byKey: map[string]int{"create serviceaccounts/token": tokens, "watch configmaps": 11, "patch pods/status": 20}}
	}
	failed := r(bench.VolumesPerPod, time.Hour, 0)
	failed.err = errors.New("boom")
	rows := []row{
		r(bench.VolumesNone, 4*time.Second, 0), r(bench.VolumesPerPod, 10*time.Second, 10),
		r(bench.VolumesNone, 5*time.Second, 0), r(bench.VolumesPerPod, 12*time.Second, 10),
		r(bench.VolumesNone, 3*time.Second, 0), failed,
	}
	var b strings.Builder
	printMedians(&b, rows)
	out := b.String()
	for _, want := range []string{
		"| podlife | none | 10 | 3 | 4.0 s (3.0 s–5.0 s) |  | 2.0 s |",
		// The lower median of 10 s and 12 s over the median of 3, 4, 5 s;
		// the failed run is left out.
		"| podlife | per-pod | 10 | 2 | 10.0 s (10.0 s–12.0 s) | 2.50× | 2.0 s | 0.00 / 0.00 s | 4.0 | 1.00 | 0.00 / 0.00 / 1.10 | 0.00 / 0.00 / 0.00 | 1.50, 1.50 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("medians lack %q:\n%s", want, out)
		}
	}
}
