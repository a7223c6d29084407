package eviction

import (
	"strings"
	"testing"
	"time"
)

func TestParseThresholds(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		hard, soft, grace, reclaim map[string]string
		want                       []string // Threshold.String, then grace and reclaim
		err                        string
	}{
		{name: "defaults", hard: DefaultHard(), want: []string{
			"memory.available<100Mi 0s", "nodefs.available<10% 0s", "nodefs.inodesFree<5% 0s",
			"imagefs.available<15% 0s", "imagefs.inodesFree<5% 0s"}},
		{name: "soft with grace and reclaim",
			hard:    map[string]string{"memory.available": "200Mi"},
			soft:    map[string]string{"memory.available": "1Gi", "pid.available": "10%"},
			grace:   map[string]string{"memory.available": "1m30s", "pid.available": "5m"},
			reclaim: map[string]string{"memory.available": "500Mi"},
			want:    []string{"memory.available<200Mi 0s min 500Mi", "memory.available<1Gi 1m30s min 500Mi", "pid.available<10% 5m0s"}},
		{name: "zero percent turns a threshold off", hard: map[string]string{"nodefs.available": "0%", "memory.available": "1Mi"},
			want: []string{"memory.available<1Mi 0s"}},
		{name: "unknown signal", hard: map[string]string{"memory.free": "1Mi"}, err: "unsupported eviction signal memory.free"},
		{name: "negative", hard: map[string]string{"memory.available": "-1Mi"}, err: "must be positive"},
		{name: "zero quantity", hard: map[string]string{"memory.available": "0"}, err: "must be positive"},
		{name: "over 100%", hard: map[string]string{"nodefs.available": "101%"}, err: "must be <= 100%"},
		{name: "bad quantity", hard: map[string]string{"nodefs.available": "lots"}, err: "nodefs.available"},
		{name: "soft without grace", soft: map[string]string{"memory.available": "1Gi"},
			err: "grace period must be specified for the soft eviction threshold memory.available"},
		{name: "negative grace", soft: map[string]string{"memory.available": "1Gi"}, grace: map[string]string{"memory.available": "-1s"},
			err: "must be a positive value"},
		{name: "negative reclaim", reclaim: map[string]string{"memory.available": "-1"}, err: "negative eviction minimum reclaim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseThresholds(tc.hard, tc.soft, tc.grace, tc.reclaim)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, th := range got {
				x := th.String() + " " + th.GracePeriod.String()
				if th.MinReclaim != nil {
					x += " min " + th.MinReclaim.String()
				}
				s = append(s, x)
			}
			if strings.Join(s, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(s, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	n := newFakeNode()
	o := n.options(t)
	o.MaxPodGracePeriodSeconds = -1
	o.Thresholds = []Threshold{{Signal: "x"}, {Signal: SignalMemoryAvailable, GracePeriod: -time.Second}}
	o.Evict = nil
	_, err := New(o)
	for _, want := range []string{"Evict is required", "MaxPodGracePeriodSeconds", "unsupported eviction signal x", "negative grace period"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err %v, want %q", err, want)
		}
	}
}

func FuzzParseThresholds(f *testing.F) {
	f.Add("memory.available", "100Mi", "1m")
	f.Add("nodefs.available", "10%", "-1s")
	f.Add("pid.available", "1e400", "x")
	f.Fuzz(func(t *testing.T, signal, value, grace string) {
		m := map[string]string{signal: value}
		ts, err := ParseThresholds(m, m, map[string]string{signal: grace}, m)
		if err != nil {
			return
		}
		for _, th := range ts {
			if !validSignal(th.Signal) || th.GracePeriod < 0 {
				t.Fatalf("bad threshold %+v", th)
			}
			_ = th.Value.amount(1 << 40)
		}
	})
}
