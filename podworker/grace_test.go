package podworker

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func i64(v int64) *int64 { return &v }

func TestEffectiveGracePeriod(t *testing.T) {
	spec := func(gp *int64, deletion *int64) *v1.Pod {
		p := &v1.Pod{}
		p.Spec.TerminationGracePeriodSeconds = gp
		p.DeletionGracePeriodSeconds = deletion
		return p
	}
	tests := []struct {
		name          string
		current       int64
		pod           *v1.Pod
		override      *int64
		want          int64
		wantShortened bool
	}{
		{"spec when nothing else", 0, spec(i64(30), nil), nil, 30, false},
		{"unset spec uses the API default", 0, spec(nil, nil), nil, DefaultTerminationGracePeriodSeconds, false},
		{"runtime-only pod without override", 0, nil, nil, 1, false},
		{"runtime-only pod with override", 0, nil, i64(1), 1, false},
		{"deletion grace beats spec", 0, spec(i64(30), i64(10)), nil, 10, false},
		{"override beats deletion grace", 0, spec(i64(30), i64(10)), i64(5), 5, false},
		{"longer override ignored", 0, spec(i64(30), i64(10)), i64(20), 10, false},
		{"override zero clamps to one", 0, spec(i64(30), nil), i64(0), 1, false},
		{"negative override clamps to one", 0, spec(i64(30), nil), i64(-5), 1, false},
		{"spec zero clamps to one", 0, spec(i64(0), nil), nil, 1, false},
		{"shorter kill shortens", 30, spec(i64(30), nil), i64(5), 5, true},
		{"longer kill never grows", 5, spec(i64(30), nil), i64(30), 5, false},
		{"longer deletion grace never grows", 5, spec(i64(30), i64(20)), nil, 5, false},
		{"spec does not apply once set", 5, spec(i64(1), nil), nil, 5, false},
		{"same value is not a shortening", 10, spec(i64(30), i64(10)), nil, 10, false},
		{"force delete from one stays one", 1, spec(i64(30), i64(0)), nil, 1, false},
		// Regression (found by FuzzEffectiveGracePeriodNeverGrows; the
		// kubelet has the same arithmetic): a deletion grace period of 0
		// must not let a longer override through.
		{"zero deletion grace then longer override", 1, spec(i64(30), i64(0)), i64(7), 1, false},
		{"zero deletion grace then longer override, first kill", 0, spec(i64(30), i64(0)), i64(7), 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, shortened := EffectiveGracePeriod(tc.current, tc.pod, tc.override)
			if got != tc.want || shortened != tc.wantShortened {
				t.Errorf("EffectiveGracePeriod(%d) = %d, %v; want %d, %v", tc.current, got, shortened, tc.want, tc.wantShortened)
			}
		})
	}
}

// The grace period never grows and never drops below one second, whatever
// sequence of kills arrives.
func FuzzEffectiveGracePeriodNeverGrows(f *testing.F) {
	f.Add(int64(30), int64(10), int64(5), true, false)
	f.Add(int64(0), int64(-1), int64(100), false, true)
	f.Fuzz(func(t *testing.T, specGP, deletionGP, override int64, hasDeletion, hasOverride bool) {
		pod := &v1.Pod{}
		pod.Spec.TerminationGracePeriodSeconds = &specGP
		var current int64
		for round := 0; round < 3; round++ {
			if hasDeletion {
				d := deletionGP - int64(round)
				pod.DeletionGracePeriodSeconds = &d
			}
			var o *int64
			if hasOverride {
				v := override + int64(round*7) - 5
				o = &v
			}
			next, _ := EffectiveGracePeriod(current, pod, o)
			if next < MinGracePeriodSeconds {
				t.Fatalf("grace period %d below minimum", next)
			}
			if current != 0 && next > current {
				t.Fatalf("grace period grew from %d to %d", current, next)
			}
			current = next
		}
	})
}
