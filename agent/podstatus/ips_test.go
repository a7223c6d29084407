package podstatus

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/runtime"
)

func TestIPs(t *testing.T) {
	hostNet := func(p *v1.Pod) { p.Spec.HostNetwork = true }
	withIPs := func(ips ...string) *runtime.PodStatus {
		rt := sandboxed()
		rt.IPs = ips
		rt.SandboxStatuses[0].IPs = ips
		return rt
	}
	onNode := sandboxed()
	onNode.IPs, onNode.SandboxStatuses[0].IPs, onNode.SandboxStatuses[0].Network = nil, nil, "node"
	for _, tc := range []struct {
		name      string
		pod       *v1.Pod
		rt        *runtime.PodStatus
		nodeIPs   []string
		prev      *v1.PodStatus
		wantPod   []string
		wantHosts []string
	}{
		{"pod network", newPod([]string{"a"}), withIPs("10.1.0.5"), []string{"192.168.1.2"}, nil, []string{"10.1.0.5"}, []string{"192.168.1.2"}},
		{"no sandbox yet", newPod([]string{"a"}), nil, []string{"192.168.1.2"}, nil, nil, []string{"192.168.1.2"}},
		{"dual stack, node v4 first", newPod([]string{"a"}), withIPs("fd00::5", "10.1.0.5", "10.1.0.6"), []string{"192.168.1.2", "fd00::2"},
			nil, []string{"10.1.0.5", "fd00::5"}, []string{"192.168.1.2", "fd00::2"}},
		{"dual stack, node v6 first", newPod([]string{"a"}), withIPs("10.1.0.5", "fd00::5"), []string{"fd00::2", "192.168.1.2"},
			nil, []string{"fd00::5", "10.1.0.5"}, []string{"fd00::2", "192.168.1.2"}},
		{"host network", newPod([]string{"a"}, hostNet), withIPs(), []string{"192.168.1.2"}, nil, []string{"192.168.1.2"}, []string{"192.168.1.2"}},
		{"runtime put the pod on the node network", newPod([]string{"a"}), onNode, []string{"192.168.1.2", "fd00::2"},
			nil, []string{"192.168.1.2", "fd00::2"}, []string{"192.168.1.2", "fd00::2"}},
		{"no node IPs: previous kept", newPod([]string{"a"}), withIPs("10.1.0.5"), nil,
			&v1.PodStatus{HostIP: "192.168.1.9", HostIPs: []v1.HostIP{{IP: "192.168.1.9"}}}, []string{"10.1.0.5"}, []string{"192.168.1.9"}},
		{"garbage skipped", newPod([]string{"a"}), withIPs("not-an-ip", "10.1.0.5"), []string{"nope", "192.168.1.2"}, nil, []string{"10.1.0.5"}, []string{"192.168.1.2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Generate(Input{Pod: tc.pod, Runtime: tc.rt, NodeIPs: tc.nodeIPs, Previous: tc.prev, Now: sec(1)})
			var pods, hosts []string
			for _, ip := range got.PodIPs {
				pods = append(pods, ip.IP)
			}
			for _, ip := range got.HostIPs {
				hosts = append(hosts, ip.IP)
			}
			if !slices.Equal(pods, tc.wantPod) || !slices.Equal(hosts, tc.wantHosts) {
				t.Fatalf("podIPs %v hostIPs %v, want %v %v", pods, hosts, tc.wantPod, tc.wantHosts)
			}
			if first := func(l []string) string {
				if len(l) == 0 {
					return ""
				}
				return l[0]
			}; got.PodIP != first(pods) || got.HostIP != first(hosts) {
				t.Errorf("podIP %q hostIP %q", got.PodIP, got.HostIP)
			}
		})
	}
}

func TestStartTimeAndObservedGeneration(t *testing.T) {
	pod := newPod([]string{"a"}, func(p *v1.Pod) { p.Generation = 4 })
	first := Generate(Input{Pod: pod, Now: sec(1).Add(123456789)})
	if first.StartTime == nil || !first.StartTime.Time.Equal(sec(1)) {
		t.Fatalf("startTime %v, want now truncated to seconds", first.StartTime)
	}
	later := Generate(Input{Pod: pod, Runtime: sandboxed(running("a", 2)), Previous: &first, Now: sec(50)})
	if !later.StartTime.Time.Equal(sec(1)) {
		t.Errorf("startTime moved to %v", later.StartTime)
	}
	if later.ObservedGeneration != 4 {
		t.Errorf("observedGeneration %d, want 4", later.ObservedGeneration)
	}
	// From the API status when nothing was published yet.
	api := pod.DeepCopy()
	api.Status.StartTime = &metav1.Time{Time: sec(-100)}
	if got := Generate(Input{Pod: api, Now: sec(5)}); !got.StartTime.Time.Equal(sec(-100)) {
		t.Errorf("startTime %v, want the API's", got.StartTime)
	}
	// Never behind what was published.
	ahead := first.DeepCopy()
	ahead.ObservedGeneration = 9
	if got := Generate(Input{Pod: pod, Previous: ahead, Now: sec(5)}); got.ObservedGeneration != 9 {
		t.Errorf("observedGeneration %d went back", got.ObservedGeneration)
	}
}
