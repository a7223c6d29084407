package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
)

func TestConditions(t *testing.T) {
	type want map[v1.PodConditionType]string // type -> "True" or "False:Reason"
	notReadySandbox := sandboxed(running("a", 1))
	notReadySandbox.SandboxStatuses[0].State = runtime.SandboxStateNotReady
	noIP := sandboxed()
	noIP.SandboxStatuses[0].IPs = nil
	nodeNet := sandboxed()
	nodeNet.SandboxStatuses[0].IPs, nodeNet.SandboxStatuses[0].Network = nil, "node"
	twoReady := sandboxed()
	twoReady.SandboxStatuses = append(twoReady.SandboxStatuses, &runtime.SandboxStatus{ID: "old", State: runtime.SandboxStateReady, CreatedAt: sec(-5), IPs: []string{"10.1.0.4"}})
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		rt   *runtime.PodStatus
		want want
	}{
		{"no sandbox", newPod([]string{"a"}), nil, want{
			v1.PodReadyToStartContainers: "False:PodSandboxNotReady", v1.PodInitialized: "True",
			v1.ContainersReady: "False:ContainersNotReady", v1.PodReady: "False:ContainersNotReady", v1.PodScheduled: "True"}},
		{"sandbox up, container creating", newPod([]string{"a"}), sandboxed(), want{
			v1.PodReadyToStartContainers: "True", v1.ContainersReady: "False:ContainersNotReady"}},
		{"running", newPod([]string{"a"}), sandboxed(running("a", 1)), want{
			v1.PodReadyToStartContainers: "True", v1.PodInitialized: "True", v1.ContainersReady: "True", v1.PodReady: "True"}},
		{"sandbox not ready", newPod([]string{"a"}), notReadySandbox, want{v1.PodReadyToStartContainers: "False:PodSandboxNotReady"}},
		{"sandbox without IP", newPod([]string{"a"}), noIP, want{v1.PodReadyToStartContainers: "False:PodSandboxNotReady"}},
		{"sandbox on the node network", newPod([]string{"a"}), nodeNet, want{v1.PodReadyToStartContainers: "True"}},
		{"host network without IP", newPod([]string{"a"}, func(p *v1.Pod) { p.Spec.HostNetwork = true }), noIP, want{v1.PodReadyToStartContainers: "True"}},
		{"two ready sandboxes", newPod([]string{"a"}), twoReady, want{v1.PodReadyToStartContainers: "False:PodSandboxNotReady"}},
		{"initializing", newPod([]string{"a"}, withInit("i")), sandboxed(running("i", 1)), want{
			v1.PodInitialized: "False:ContainersNotInitialized", v1.ContainersReady: "False:ContainersNotReady"}},
		{"sidecar not ready holds ContainersReady", newPod([]string{"a"}, withSidecar("s"), func(p *v1.Pod) {
			p.Spec.InitContainers[0].ReadinessProbe = &v1.Probe{}
		}), sandboxed(running("s", 1), running("a", 2)), want{v1.PodInitialized: "True", v1.ContainersReady: "False:ContainersNotReady"}},
		{"succeeded", newPod([]string{"a"}, withPolicy(v1.RestartPolicyNever)), sandboxed(exited("a", 0, 1)), want{
			v1.PodInitialized: "True", v1.ContainersReady: "False:PodCompleted", v1.PodReady: "False:PodCompleted"}},
		{"failed", newPod([]string{"a"}, withPolicy(v1.RestartPolicyNever)), sandboxed(exited("a", 1, 1)), want{
			v1.ContainersReady: "False:PodFailed", v1.PodReady: "False:PodFailed"}},
		{"readiness gate missing", newPod([]string{"a"}, func(p *v1.Pod) {
			p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}
		}), sandboxed(running("a", 1)), want{v1.ContainersReady: "True", v1.PodReady: "False:ReadinessGatesNotReady"}},
		{"readiness gate true", newPod([]string{"a"}, func(p *v1.Pod) {
			p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}
			p.Status.Conditions = []v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionTrue}}
		}), sandboxed(running("a", 1)), want{v1.PodReady: "True", "example.com/lb": "True"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Generate(Input{Pod: tc.pod, Runtime: tc.rt, Now: sec(10), ProbeResult: probes{}.result})
			for typ, w := range tc.want {
				c := condition(got, typ)
				s := string(c.Status)
				if c.Status == v1.ConditionFalse {
					s += ":" + c.Reason
				}
				if s != w {
					t.Errorf("%s: %s (%s), want %s", typ, s, c.Message, w)
				}
			}
			for _, typ := range []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled} {
				c := condition(got, typ)
				if c.ObservedGeneration != tc.pod.Generation {
					t.Errorf("%s: observedGeneration %d, want %d", typ, c.ObservedGeneration, tc.pod.Generation)
				}
				if !c.LastTransitionTime.Time.Equal(sec(10)) {
					t.Errorf("%s: lastTransitionTime %v, want now", typ, c.LastTransitionTime)
				}
			}
		})
	}
}

// TestLastTransitionTime steps a pod through its life and checks that each
// condition's lastTransitionTime moves exactly when its status changes.
func TestLastTransitionTime(t *testing.T) {
	pod := newPod([]string{"a"}, func(p *v1.Pod) { p.Spec.Containers[0].ReadinessProbe = &v1.Probe{} })
	steps := []struct {
		rt    *runtime.PodStatus
		ready bool // readiness probe result
	}{
		{nil, false},
		{sandboxed(), false},
		{sandboxed(running("a", 2)), false},
		{sandboxed(running("a", 2)), true},
		{sandboxed(running("a", 2)), true},
		{sandboxed(running("a", 2)), false},
		{sandboxed(running("a", 2)), false},
	}
	var prev *v1.PodStatus
	for i, step := range steps {
		ready := step.ready
		pr := func(_ types.UID, _, _ string, p ProbeType) (bool, bool) { return ready, p == Readiness }
		got := Generate(Input{Pod: pod, Runtime: step.rt, Previous: prev, Now: sec(100 * (i + 1)), ProbeResult: pr})
		for _, c := range got.Conditions {
			var old *v1.PodCondition
			if prev != nil {
				o := condition(*prev, c.Type)
				old = &o
			}
			moved := old == nil || !old.LastTransitionTime.Equal(&c.LastTransitionTime)
			changed := old == nil || old.Status != c.Status
			if moved != changed {
				t.Errorf("step %d: %s status %s→%s but lastTransitionTime moved=%v", i, c.Type, statusOf(old), c.Status, moved)
			}
			if changed && !c.LastTransitionTime.Time.Equal(sec(100*(i+1))) {
				t.Errorf("step %d: %s changed at %v, want now", i, c.Type, c.LastTransitionTime)
			}
		}
		prev = &got
	}
	if c := condition(*prev, v1.PodReady); c.Status != v1.ConditionFalse || !c.LastTransitionTime.Time.Equal(sec(600)) {
		t.Errorf("Ready at the end: %s since %v, want False since step 5", c.Status, c.LastTransitionTime)
	}
	if c := condition(*prev, v1.PodScheduled); !c.LastTransitionTime.Time.Equal(sec(100)) {
		t.Errorf("PodScheduled moved: %v", c.LastTransitionTime)
	}
}

func statusOf(c *v1.PodCondition) v1.ConditionStatus {
	if c == nil {
		return "<none>"
	}
	return c.Status
}

func TestConditionsOwnedByOthersKept(t *testing.T) {
	pod := newPod([]string{"a"})
	lb := v1.PodCondition{Type: "example.com/lb", Status: v1.ConditionFalse, LastTransitionTime: metav1.NewTime(sec(-50))}
	pod.Status.Conditions = []v1.PodCondition{lb, {Type: v1.PodReady, Status: v1.ConditionTrue}}
	disruption := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "TerminationByKubelet", LastTransitionTime: metav1.NewTime(sec(-10))}
	prev := &v1.PodStatus{Conditions: []v1.PodCondition{disruption}}
	got := Generate(Input{Pod: pod, Runtime: sandboxed(running("a", 1)), Previous: prev, Now: sec(10)})
	if c := condition(got, "example.com/lb"); c.Status != v1.ConditionFalse || !c.LastTransitionTime.Time.Equal(sec(-50)) {
		t.Errorf("foreign condition not kept: %+v", c)
	}
	if c := condition(got, v1.DisruptionTarget); c.Reason != "TerminationByKubelet" {
		t.Errorf("DisruptionTarget not kept: %+v", c)
	}
	n := 0
	for _, c := range got.Conditions {
		if c.Type == v1.PodReady {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d Ready conditions", n)
	}
}

func TestNeedsReadinessReconcile(t *testing.T) {
	gated := func(conds ...v1.PodCondition) *v1.Pod {
		p := newPod([]string{"a"})
		p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "x/one"}}
		p.Status.Conditions = conds
		return p
	}
	c := func(t v1.PodConditionType, s v1.ConditionStatus, msg string) v1.PodCondition {
		return v1.PodCondition{Type: t, Status: s, Message: msg}
	}
	missing := `corresponding condition of pod readiness gate "x/one" does not exist.`
	notTrue := `the status of pod readiness gate "x/one" is not "True", but False`
	plain := newPod([]string{"a"})
	plain.Status.Conditions = []v1.PodCondition{c(v1.ContainersReady, v1.ConditionTrue, ""), c(v1.PodReady, v1.ConditionFalse, "")}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want bool
	}{
		{"nil pod", nil, false},
		{"no readiness gates", plain, false},
		{"no Ready condition yet", gated(c("x/one", v1.ConditionTrue, "")), false},
		{"gate set True", gated(c("x/one", v1.ConditionTrue, ""), c(v1.ContainersReady, v1.ConditionTrue, ""), c(v1.PodReady, v1.ConditionFalse, missing)), true},
		{"gate True, Ready True", gated(c("x/one", v1.ConditionTrue, ""), c(v1.ContainersReady, v1.ConditionTrue, ""), c(v1.PodReady, v1.ConditionTrue, "")), false},
		{"gate set False", gated(c("x/one", v1.ConditionFalse, ""), c(v1.ContainersReady, v1.ConditionTrue, ""), c(v1.PodReady, v1.ConditionTrue, "")), true},
		{"gate False, message already says so", gated(c("x/one", v1.ConditionFalse, ""), c(v1.ContainersReady, v1.ConditionTrue, ""), c(v1.PodReady, v1.ConditionFalse, notTrue)), false},
		{"gate missing, message says it changed", gated(c(v1.ContainersReady, v1.ConditionTrue, ""), c(v1.PodReady, v1.ConditionFalse, notTrue)), true},
		{"containers not ready", gated(c("x/one", v1.ConditionTrue, ""), c(v1.ContainersReady, v1.ConditionFalse, ""), c(v1.PodReady, v1.ConditionFalse, "")), false},
	} {
		if got := NeedsReadinessReconcile(tc.pod); got != tc.want {
			t.Errorf("%s: NeedsReadinessReconcile = %v, want %v", tc.name, got, tc.want)
		}
	}
}
