package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWithContainerReadiness(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := newPod([]string{"a", "b"}, func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{{Name: "side", RestartPolicy: &always}}
	})
	run := func(name string) v1.ContainerStatus {
		return v1.ContainerStatus{Name: name, ContainerID: "containerd://id-" + name, Ready: true,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(sec(0))}}}
	}
	then := metav1.NewTime(sec(1))
	base := v1.PodStatus{
		Phase:                 v1.PodRunning,
		InitContainerStatuses: []v1.ContainerStatus{run("side")},
		ContainerStatuses:     []v1.ContainerStatus{run("a"), run("b")},
		Conditions: []v1.PodCondition{
			{Type: v1.PodInitialized, Status: v1.ConditionTrue, LastTransitionTime: then},
			{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: then},
			{Type: v1.ContainersReady, Status: v1.ConditionTrue, LastTransitionTime: then},
		},
	}
	get := func(st v1.PodStatus, ct v1.PodConditionType) v1.PodCondition {
		t.Helper()
		c := findCondition(st.Conditions, ct)
		if c == nil {
			t.Fatalf("no %s condition in %+v", ct, st.Conditions)
		}
		return *c
	}

	got, ok := WithContainerReadiness(pod, base, "a", "id-a", false, sec(10).Add(300e6))
	if !ok {
		t.Fatal("a turned not ready: not changed")
	}
	if status(got.ContainerStatuses, "a").Ready || !status(got.ContainerStatuses, "b").Ready {
		t.Fatalf("container statuses %+v, want a not ready, b ready", got.ContainerStatuses)
	}
	cr, rd := get(got, v1.ContainersReady), get(got, v1.PodReady)
	if cr.Status != v1.ConditionFalse || cr.Reason != ReasonContainersNotReady || cr.Message != "containers with unready status: [a]" || !cr.LastTransitionTime.Time.Equal(sec(10)) {
		t.Fatalf("ContainersReady %+v, want False for [a] since %v", cr, sec(10))
	}
	if rd.Status != v1.ConditionFalse || rd.Message != cr.Message || !rd.LastTransitionTime.Time.Equal(sec(10)) {
		t.Fatalf("Ready %+v, want False as ContainersReady", rd)
	}
	if get(got, v1.PodInitialized).LastTransitionTime != then || len(got.Conditions) != 3 {
		t.Fatalf("other conditions changed: %+v", got.Conditions)
	}
	if !status(base.ContainerStatuses, "a").Ready || get(base, v1.PodReady).Status != v1.ConditionTrue {
		t.Fatal("the given status was changed")
	}

	// The sidecar counts too.
	if side, ok := WithContainerReadiness(pod, base, "side", "id-side", false, sec(10)); !ok || get(side, v1.PodReady).Status != v1.ConditionFalse {
		t.Fatalf("sidecar turned not ready: changed %v, conditions %+v", ok, side.Conditions)
	}
	// Back to ready (an ID with its prefix names the instance too): the
	// conditions follow, with a new transition time.
	back, ok := WithContainerReadiness(pod, got, "a", "containerd://id-a", true, sec(20))
	if !ok || get(back, v1.PodReady).Status != v1.ConditionTrue || !get(back, v1.PodReady).LastTransitionTime.Time.Equal(sec(20)) {
		t.Fatalf("a ready again: changed %v, conditions %+v", ok, back.Conditions)
	}

	exitedA := *base.DeepCopy()
	exitedA.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}
	failed := *base.DeepCopy()
	failed.Phase = v1.PodFailed
	for _, tc := range []struct {
		name  string
		st    v1.PodStatus
		c, id string
		ready bool
	}{
		{"already ready", base, "a", "id-a", true},
		{"another instance", base, "a", "id-old", false},
		{"no ID", base, "a", "", false},
		{"unknown container", base, "c", "id-c", false},
		{"container not running", exitedA, "a", "id-a", false},
		{"terminal phase", failed, "a", "id-a", false},
	} {
		if out, ok := WithContainerReadiness(pod, tc.st, tc.c, tc.id, tc.ready, sec(30)); ok || out.Conditions[1].Status != tc.st.Conditions[1].Status {
			t.Errorf("%s: changed %v, want the status unchanged", tc.name, ok)
		}
	}
}
