package bench

import (
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		var ds []time.Duration
		for _, v := range vs {
			ds = append(ds, time.Duration(v)*time.Millisecond)
		}
		return ds
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100..1, unsorted
	}
	for _, tc := range []struct {
		name string
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one", ms(7), 99, 7 * time.Millisecond},
		{"median odd", ms(3, 1, 2), 50, 2 * time.Millisecond},
		{"median even takes lower", ms(4, 1, 3, 2), 50, 2 * time.Millisecond},
		{"p99 of 100", ms(hundred...), 99, 99 * time.Millisecond},
		{"p100", ms(hundred...), 100, 100 * time.Millisecond},
		{"p1", ms(hundred...), 1, 1 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tc.ds...)
			if got := Percentile(tc.ds, tc.p); got != tc.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tc.ds, tc.p, got, tc.want)
			}
			for i := range in {
				if in[i] != tc.ds[i] {
					t.Fatalf("input modified")
				}
			}
		})
	}
}

func TestRequestTotal(t *testing.T) {
	const text = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 12
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 3e+02
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 5
apiserver_request_total_other{code="200"} 1000
apiserver_request_duration_seconds_count{verb="GET"} 77
`
	for _, tc := range []struct {
		match []string
		want  float64
	}{
		{nil, 317},
		{[]string{`resource="pods"`}, 312},
		{[]string{`resource="pods"`, `verb="PATCH"`}, 12},
		{[]string{`resource="nodes"`}, 0},
	} {
		got, err := RequestTotal(strings.NewReader(text), tc.match...)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("RequestTotal(%v) = %v, want %v", tc.match, got, tc.want)
		}
	}
	if _, err := RequestTotal(strings.NewReader(`apiserver_request_total{code="200"} x`)); err == nil {
		t.Error("a bad value: no error")
	}
}

func TestRuntimeOperations(t *testing.T) {
	const text = `# TYPE kubelet_runtime_operations_total counter
kubelet_runtime_operations_total{operation_type="run_podsandbox"} 100
kubelet_runtime_operations_total{operation_type="container_status"} 2.5e+02
kubelet_runtime_operations_total_other{operation_type="run_podsandbox"} 7
kubelet_runtime_operations_errors_total{operation_type="run_podsandbox"} 3
`
	got, err := RuntimeOperations(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["run_podsandbox"] != 100 || got["container_status"] != 250 {
		t.Fatalf("RuntimeOperations = %v", got)
	}
	if _, err := RuntimeOperations(strings.NewReader("kubelet_runtime_operations_total{operation_type=\"x\"} nope\n")); err == nil {
		t.Fatal("a bad value: no error")
	}
}

func TestParseProcStat(t *testing.T) {
	// A command name with a space and a parenthesis; utime 250, stime 70.
	const stat = "4242 (my (odd) cmd) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 70 0 0 20 0 12 0 100 0 0"
	got, err := parseProcStat(stat)
	if err != nil || got != 3200*time.Millisecond {
		t.Errorf("parseProcStat = %v, %v; want 3.2s", got, err)
	}
	if _, err := parseProcStat("4242 (short) S 1 2"); err == nil {
		t.Error("short stat: no error")
	}
}

func TestParseMachineStat(t *testing.T) {
	const stat = "cpu  100 5 50 800 40 3 2 0 7 0\ncpu0 50 2 25 400 20 1 1 0 0 0\nintr 1\n"
	busy, total, err := parseMachineStat(stat)
	if err != nil {
		t.Fatal(err)
	}
	// total: user..steal = 100+5+50+800+40+3+2+0 = 1000 ticks; idle+iowait 840.
	if busy != 1600*time.Millisecond || total != 10*time.Second {
		t.Errorf("busy %v, total %v; want 1.6s, 10s", busy, total)
	}
}
