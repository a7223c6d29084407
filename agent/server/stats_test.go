package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func u64(n uint64) *uint64 { return &n }

func podStats() []statsapi.PodStats {
	t := metav1.NewTime(time.Unix(1700000000, 0))
	return []statsapi.PodStats{{
		PodRef:    statsapi.PodReference{Name: "p", Namespace: "default", UID: "p-uid"},
		StartTime: t,
		CPU:       &statsapi.CPUStats{Time: t, UsageCoreNanoSeconds: u64(3e9)},
		Memory:    &statsapi.MemoryStats{Time: t, WorkingSetBytes: u64(4096)},
		Containers: []statsapi.ContainerStats{{
			Name: "c", StartTime: t,
			CPU:    &statsapi.CPUStats{Time: t, UsageCoreNanoSeconds: u64(2e9)},
			Memory: &statsapi.MemoryStats{Time: t, WorkingSetBytes: u64(2048)},
		}},
	}}
}

func TestSummary(t *testing.T) {
	w, _ := newWorld(t)
	w.stats = podStats()
	base, authz := newServer(t, w)
	code, body := get(t, "GET", base+"/stats/summary", "admin")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	if a := authz.last(); a.GetSubresource() != "stats" {
		t.Errorf("subresource %q, want stats", a.GetSubresource())
	}
	var sum statsapi.Summary
	if err := json.Unmarshal([]byte(body), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Node.NodeName != "n1" || *sum.Node.CPU.UsageCoreNanoSeconds != 5e9 || len(sum.Pods) != 1 ||
		*sum.Pods[0].Containers[0].Memory.WorkingSetBytes != 2048 {
		t.Errorf("summary %s", body)
	}
	w.mu.Lock()
	w.down = true
	w.mu.Unlock()
	if code, _ := get(t, "GET", base+"/stats/summary", "admin"); code != http.StatusServiceUnavailable {
		t.Errorf("runtime down: %d, want 503", code)
	}
}

func TestResourceMetrics(t *testing.T) {
	w, _ := newWorld(t)
	w.stats = podStats()
	base, authz := newServer(t, w)
	code, body := get(t, "GET", base+"/metrics/resource", "admin")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	if a := authz.last(); a.GetSubresource() != "metrics" {
		t.Errorf("subresource %q, want metrics", a.GetSubresource())
	}
	for _, want := range []string{
		"node_cpu_usage_seconds_total 5 1700000000000",
		"node_memory_working_set_bytes 1.073741824e+09 1700000000000",
		`container_cpu_usage_seconds_total{container="c",namespace="default",pod="p"} 2 1700000000000`,
		`container_memory_working_set_bytes{container="c",namespace="default",pod="p"} 2048 1700000000000`,
		`container_start_time_seconds{container="c",namespace="default",pod="p"} 1.7e+09`,
		`pod_cpu_usage_seconds_total{namespace="default",pod="p"} 3 1700000000000`,
		`pod_memory_working_set_bytes{namespace="default",pod="p"} 4096 1700000000000`,
		"scrape_error 0",
		"resource_scrape_error 0",
		"# TYPE container_cpu_usage_seconds_total counter",
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("no %q in\n%s", want, body)
		}
	}
	// The runtime down: node figures still, scrape_error 1.
	w.mu.Lock()
	w.down = true
	w.mu.Unlock()
	_, body = get(t, "GET", base+"/metrics/resource", "admin")
	if !strings.Contains(body, "\nscrape_error 1\n") || !strings.Contains(body, "node_cpu_usage_seconds_total 5") || strings.Contains(body, "container_") {
		t.Errorf("runtime down:\n%s", body)
	}
}

func TestPods(t *testing.T) {
	w, _ := newWorld(t)
	base, _ := newServer(t, w)
	code, body := get(t, "GET", base+"/pods", "admin")
	var list v1.PodList
	if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil {
		t.Fatalf("%d %v %s", code, err, body)
	}
	if list.Kind != "PodList" || len(list.Items) != 1 || list.Items[0].Name != "p" || list.Items[0].Status.ContainerStatuses[0].ContainerID != "fake://c1" {
		t.Errorf("pods %s", body)
	}
}
