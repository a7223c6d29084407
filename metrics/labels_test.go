package metrics_test

import (
	"testing"

	"github.com/podlife/podlife/metrics"
)

func TestWorkingPodKeys(t *testing.T) {
	keys := metrics.WorkingPodKeys()
	if len(keys) != 15 {
		t.Fatalf("len(WorkingPodKeys()) = %d, want 15", len(keys))
	}
	seen := map[metrics.WorkingPodKey]bool{}
	for _, k := range keys {
		if !k.Valid() {
			t.Errorf("%v is returned but not Valid", k)
		}
		if seen[k] {
			t.Errorf("%v returned twice", k)
		}
		seen[k] = true
	}
	// Every other combination of the known label values is invalid.
	n := 0
	for _, l := range []string{metrics.LifecycleSync, metrics.LifecycleTerminating, metrics.LifecycleTerminated} {
		for _, c := range []string{metrics.ConfigDesired, metrics.ConfigOrphan, metrics.ConfigRuntimeOnly} {
			for _, s := range []string{metrics.StaticFalse, metrics.StaticTrue, metrics.StaticUnknown} {
				k := metrics.WorkingPodKey{Lifecycle: l, Config: c, Static: s}
				if k.Valid() != seen[k] {
					t.Errorf("%v: Valid() = %v, in WorkingPodKeys = %v", k, k.Valid(), seen[k])
				}
				n++
			}
		}
	}
	if n != 27 {
		t.Fatalf("checked %d combinations, want 27", n)
	}
	// The result is the caller's to change.
	keys[0].Lifecycle = "changed"
	if metrics.WorkingPodKeys()[0].Lifecycle == "changed" {
		t.Error("WorkingPodKeys returns shared state")
	}
}

func TestWorkingPodKeyFor(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		orphan, hasConfig, static bool
		want                      metrics.WorkingPodKey
	}{
		{"desired api pod", false, true, false, metrics.WorkingPodKey{Config: metrics.ConfigDesired, Static: metrics.StaticFalse}},
		{"desired static pod", false, true, true, metrics.WorkingPodKey{Config: metrics.ConfigDesired, Static: metrics.StaticTrue}},
		{"orphaned api pod", true, true, false, metrics.WorkingPodKey{Config: metrics.ConfigOrphan, Static: metrics.StaticFalse}},
		{"orphaned static pod", true, true, true, metrics.WorkingPodKey{Config: metrics.ConfigOrphan, Static: metrics.StaticTrue}},
		{"runtime-only pod", true, false, false, metrics.WorkingPodKey{Config: metrics.ConfigRuntimeOnly, Static: metrics.StaticUnknown}},
		{"runtime-only wins over static", true, false, true, metrics.WorkingPodKey{Config: metrics.ConfigRuntimeOnly, Static: metrics.StaticUnknown}},
		{"runtime-only wins over desired", false, false, false, metrics.WorkingPodKey{Config: metrics.ConfigRuntimeOnly, Static: metrics.StaticUnknown}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, lifecycle := range []string{metrics.LifecycleSync, metrics.LifecycleTerminating, metrics.LifecycleTerminated} {
				want := tc.want
				want.Lifecycle = lifecycle
				got := metrics.WorkingPodKeyFor(lifecycle, tc.orphan, tc.hasConfig, tc.static)
				if got != want {
					t.Errorf("WorkingPodKeyFor(%q, orphan=%v, hasConfig=%v, static=%v) = %v, want %v",
						lifecycle, tc.orphan, tc.hasConfig, tc.static, got, want)
				}
				if !got.Valid() {
					t.Errorf("%v is not Valid", got)
				}
			}
		})
	}
}

func TestWorkingPodCountsInc(t *testing.T) {
	counts := metrics.WorkingPodCounts{}
	k := metrics.WorkingPodKeyFor(metrics.LifecycleSync, false, true, true)
	counts.Inc(k)
	counts.Inc(k)
	if counts[k] != 2 {
		t.Errorf("counts[%v] = %d, want 2", k, counts[k])
	}
}
