package prober_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime/prober"
)

func TestUpdatePodStatus(t *testing.T) {
	h := newHarness(t)
	always := v1.ContainerRestartPolicyAlways
	pod := podWith("st",
		v1.Container{Name: "probed", StartupProbe: execProbe("start", nil), ReadinessProbe: execProbe("ready", nil)},
		v1.Container{Name: "plain"},
		v1.Container{Name: "stopped", ReadinessProbe: execProbe("never", nil)},
	)
	pod.Spec.InitContainers = []v1.Container{
		{Name: "init"},
		{Name: "sidecar", RestartPolicy: &always, ReadinessProbe: execProbe("side", nil)},
	}
	h.m.SetContainers(pod, "", map[string]prober.RunningContainer{
		"probed": {ID: "p1"}, "plain": {ID: "q1"}, "sidecar": {ID: "s1"},
	})
	runningState := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	status := func() *v1.PodStatus {
		return &v1.PodStatus{
			InitContainerStatuses: []v1.ContainerStatus{
				{Name: "init", ContainerID: "fake://i1", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}, Ready: true},
				{Name: "sidecar", ContainerID: "fake://s1", State: runningState},
			},
			ContainerStatuses: []v1.ContainerStatus{
				{Name: "probed", ContainerID: "fake://p1", State: runningState},
				{Name: "plain", ContainerID: "fake://q1", State: runningState},
				{Name: "stopped", ContainerID: "fake://x1", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}},
			},
		}
	}
	type sr struct {
		Name           string
		Started, Ready bool
	}
	summary := func(s *v1.PodStatus) []sr {
		var out []sr
		for _, cs := range append(s.InitContainerStatuses, s.ContainerStatuses...) {
			out = append(out, sr{cs.Name, cs.Started != nil && *cs.Started, cs.Ready})
		}
		return out
	}
	check := func(what string, want []sr) {
		t.Helper()
		s := status()
		h.m.UpdatePodStatus(pod.UID, s)
		if d := cmp.Diff(want, summary(s)); d != "" {
			t.Fatalf("%s (-want +got):\n%s", what, d)
		}
	}
	check("before any probe", []sr{{"init", false, true}, {"sidecar", true, false}, {"probed", false, false}, {"plain", true, true}, {"stopped", false, false}})
	h.probe("start", t0, 0)
	h.update()
	check("started", []sr{{"init", false, true}, {"sidecar", true, false}, {"probed", true, false}, {"plain", true, true}, {"stopped", false, false}})
	h.probe("ready", t0, 0)
	h.probe("side", t0, 0)
	h.update()
	h.update()
	check("ready", []sr{{"init", false, true}, {"sidecar", true, true}, {"probed", true, true}, {"plain", true, true}, {"stopped", false, false}})
	// A status of an instance the manager has not been told of yet.
	s := status()
	s.ContainerStatuses[0].ContainerID = "fake://p2"
	h.m.UpdatePodStatus(pod.UID, s)
	if cs := s.ContainerStatuses[0]; *cs.Started || cs.Ready {
		t.Fatalf("unseen instance: started %v ready %v", *cs.Started, cs.Ready)
	}
}
