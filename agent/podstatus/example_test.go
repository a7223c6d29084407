package podstatus_test

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/agent/podstatus"
	"github.com/podlife/podlife/runtime"
)

// A pod with an init container and a readiness probe, seen three times: while
// it initializes, once its app runs, and once the probe passed.
func ExampleGenerate() {
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "migrate", Image: "db-tools"}},
		Containers:     []v1.Container{{Name: "web", Image: "nginx", ReadinessProbe: &v1.Probe{}}},
	}}
	pod.Name, pod.Namespace, pod.UID, pod.Generation = "web", "default", "uid-1", 1
	t0 := time.Date(2026, 12, 4, 2, 0, 0, 0, time.UTC)
	sandbox := []*runtime.SandboxStatus{{ID: "sb1", State: runtime.SandboxStateReady, CreatedAt: t0, IPs: []string{"10.1.0.5"}}}
	migrate := &runtime.ContainerStatus{ID: runtime.ContainerID{Type: "containerd", ID: "m1"}, Name: "migrate",
		State: runtime.ContainerStateRunning, CreatedAt: t0.Add(time.Second), StartedAt: t0.Add(time.Second)}
	web := &runtime.ContainerStatus{ID: runtime.ContainerID{Type: "containerd", ID: "w1"}, Name: "web",
		State: runtime.ContainerStateRunning, CreatedAt: t0.Add(9 * time.Second), StartedAt: t0.Add(9 * time.Second)}
	// The prober's answer: no readiness result until it passes.
	probePassed := false
	probes := func(_ types.UID, _, _ string, _ podstatus.ProbeType) (success, known bool) {
		return probePassed, probePassed
	}
	node := []string{"192.168.1.2"}
	show := func(s v1.PodStatus) {
		var ready, initialized v1.ConditionStatus
		for _, c := range s.Conditions {
			switch c.Type {
			case v1.PodReady:
				ready = c.Status
			case v1.PodInitialized:
				initialized = c.Status
			}
		}
		w := s.ContainerStatuses[0]
		state := "running"
		if w.State.Waiting != nil {
			state = "waiting " + w.State.Waiting.Reason
		}
		fmt.Printf("%s initialized=%s ready=%s web: %s, ready=%v; podIP %s hostIP %s\n",
			s.Phase, initialized, ready, state, w.Ready, s.PodIP, s.HostIP)
	}

	runtimeStatus := &runtime.PodStatus{ID: pod.UID, IPs: []string{"10.1.0.5"}, SandboxStatuses: sandbox,
		ContainerStatuses: []*runtime.ContainerStatus{migrate}}
	first := podstatus.Generate(podstatus.Input{Pod: pod, Runtime: runtimeStatus, NodeIPs: node, ProbeResult: probes, Now: t0.Add(2 * time.Second)})
	show(first)

	migrate.State, migrate.FinishedAt = runtime.ContainerStateExited, t0.Add(8*time.Second)
	runtimeStatus.ContainerStatuses = append(runtimeStatus.ContainerStatuses, web)
	second := podstatus.Generate(podstatus.Input{Pod: pod, Runtime: runtimeStatus, Previous: &first, NodeIPs: node, ProbeResult: probes, Now: t0.Add(10 * time.Second)})
	show(second)

	probePassed = true
	third := podstatus.Generate(podstatus.Input{Pod: pod, Runtime: runtimeStatus, Previous: &second, NodeIPs: node, ProbeResult: probes, Now: t0.Add(15 * time.Second)})
	show(third)
	fmt.Println("started at", third.StartTime.UTC().Format(time.TimeOnly), "qos", third.QOSClass)
	// Output:
	// Pending initialized=False ready=False web: waiting PodInitializing, ready=false; podIP 10.1.0.5 hostIP 192.168.1.2
	// Running initialized=True ready=False web: running, ready=false; podIP 10.1.0.5 hostIP 192.168.1.2
	// Running initialized=True ready=True web: running, ready=true; podIP 10.1.0.5 hostIP 192.168.1.2
	// started at 02:00:02 qos BestEffort
}
