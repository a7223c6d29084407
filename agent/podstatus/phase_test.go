package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime"
)

func TestPhase(t *testing.T) {
	never, onFailure := withPolicy(v1.RestartPolicyNever), withPolicy(v1.RestartPolicyOnFailure)
	started := func(name string, at int) *runtime.ContainerStatus { return running(name, at) }
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		rt       *runtime.PodStatus
		terminal bool
		want     v1.PodPhase
	}{
		// Regular containers (the agent's former table).
		{"nothing yet", newPod([]string{"a"}), nil, false, v1.PodPending},
		{"one of two started", newPod([]string{"a", "b"}), sandboxed(running("a", 1)), false, v1.PodPending},
		{"running", newPod([]string{"a", "b"}), sandboxed(running("a", 1), exited("b", 1, 1)), false, v1.PodRunning},
		{"always restarts", newPod([]string{"a"}), sandboxed(exited("a", 0, 1)), false, v1.PodRunning},
		{"on failure, succeeded", newPod([]string{"a"}, onFailure), sandboxed(exited("a", 0, 1)), false, v1.PodSucceeded},
		{"on failure, failed restarts", newPod([]string{"a"}, onFailure), sandboxed(exited("a", 2, 1)), false, v1.PodRunning},
		{"never, failed", newPod([]string{"a", "b"}, never), sandboxed(exited("a", 0, 1), exited("b", 1, 1)), false, v1.PodFailed},
		{"never, succeeded", newPod([]string{"a"}, never), sandboxed(exited("a", 0, 1)), false, v1.PodSucceeded},
		{"terminated, all succeeded", newPod([]string{"a"}), sandboxed(exited("a", 0, 1)), true, v1.PodSucceeded},
		{"terminated, killed", newPod([]string{"a"}), sandboxed(exited("a", 137, 1)), true, v1.PodFailed},
		{"terminated, never started", newPod([]string{"a"}), nil, true, v1.PodFailed},
		{"terminated, still shown running", newPod([]string{"a"}), sandboxed(running("a", 1)), true, v1.PodFailed},

		// Init containers.
		{"init running", newPod([]string{"a"}, withInit("i1", "i2")), sandboxed(running("i1", 1)), false, v1.PodPending},
		{"init done, next not started", newPod([]string{"a"}, withInit("i1", "i2")), sandboxed(exited("i1", 0, 1)), false, v1.PodPending},
		{"inits done, app running", newPod([]string{"a"}, withInit("i1", "i2")),
			sandboxed(exited("i1", 0, 1), exited("i2", 0, 2), running("a", 3)), false, v1.PodRunning},
		{"init failed, never", newPod([]string{"a"}, never, withInit("i1")), sandboxed(exited("i1", 1, 1)), false, v1.PodFailed},
		{"init failed, on failure restarts", newPod([]string{"a"}, onFailure, withInit("i1")), sandboxed(exited("i1", 1, 1)), false, v1.PodPending},
		{"init failed, always restarts", newPod([]string{"a"}, withInit("i1")), sandboxed(exited("i1", 1, 1)), false, v1.PodPending},
		{"init failed, its own policy says never", newPod([]string{"a"}, withInit("i1"), func(p *v1.Pod) {
			n := v1.ContainerRestartPolicyNever
			p.Spec.InitContainers[0].RestartPolicy = &n
		}), sandboxed(exited("i1", 1, 1)), false, v1.PodFailed},

		// Sidecars.
		{"sidecar starting", newPod([]string{"a"}, withSidecar("s")), sandboxed(started("s", 1)), false, v1.PodPending},
		{"sidecar and app running", newPod([]string{"a"}, withSidecar("s")), sandboxed(running("s", 1), running("a", 2)), false, v1.PodRunning},
		{"sidecar restarting after init", newPod([]string{"a"}, withSidecar("s")),
			sandboxed(exited("s", 1, 1), running("a", 2)), false, v1.PodRunning},
		{"app done, sidecar runs, never", newPod([]string{"a"}, never, withSidecar("s")),
			sandboxed(running("s", 1), exited("a", 0, 2)), false, v1.PodSucceeded},
		{"app failed, sidecar runs, never", newPod([]string{"a"}, never, withSidecar("s")),
			sandboxed(running("s", 1), exited("a", 3, 2)), false, v1.PodFailed},
		{"app done, sidecar runs, on failure", newPod([]string{"a"}, onFailure, withSidecar("s")),
			sandboxed(running("s", 1), exited("a", 0, 2)), false, v1.PodSucceeded},
		{"app done, sidecar runs, always", newPod([]string{"a"}, withSidecar("s")),
			sandboxed(running("s", 1), exited("a", 0, 2)), false, v1.PodRunning},
		{"app done, sidecar stopped, terminal", newPod([]string{"a"}, never, withSidecar("s")),
			sandboxed(exited("s", 137, 1), exited("a", 0, 2)), true, v1.PodSucceeded},
		{"sidecar failed, app done, never", newPod([]string{"a"}, never, withSidecar("s")),
			sandboxed(exited("s", 1, 1), exited("a", 0, 2)), false, v1.PodSucceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Generate(Input{Pod: tc.pod, Runtime: tc.rt, Terminal: tc.terminal, Now: sec(10)})
			if got.Phase != tc.want {
				t.Errorf("phase %s, want %s (containers %+v, init %+v)", got.Phase, tc.want, got.ContainerStatuses, got.InitContainerStatuses)
			}
			if tc.terminal {
				for _, cs := range got.ContainerStatuses {
					if cs.State.Terminated == nil {
						t.Errorf("terminated pod with container %s not terminated: %s", cs.Name, stateOf(cs.State))
					}
				}
			}
		})
	}
}

func TestPhaseNeverLeavesTerminal(t *testing.T) {
	pod := newPod([]string{"a"})
	rt := sandboxed(running("a", 1))
	for _, tc := range []struct {
		name     string
		previous *v1.PodStatus
		api      v1.PodPhase
		want     v1.PodPhase
	}{
		{"previous failed", &v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: "gone"}, "", v1.PodFailed},
		{"api succeeded", nil, v1.PodSucceeded, v1.PodSucceeded},
		{"neither", &v1.PodStatus{Phase: v1.PodPending}, v1.PodPending, v1.PodRunning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod.DeepCopy()
			p.Status.Phase = tc.api
			got := Generate(Input{Pod: p, Runtime: rt, Previous: tc.previous, Now: sec(5)})
			if got.Phase != tc.want {
				t.Fatalf("phase %s, want %s", got.Phase, tc.want)
			}
			if tc.previous != nil && tc.previous.Phase == got.Phase && (got.Reason != tc.previous.Reason || got.Message != tc.previous.Message) {
				t.Errorf("reason/message %q/%q not kept with the phase", got.Reason, got.Message)
			}
		})
	}
}

func TestShouldRestartRules(t *testing.T) {
	never := v1.ContainerRestartPolicyNever
	c := v1.Container{Name: "a", RestartPolicy: &never, RestartPolicyRules: []v1.ContainerRestartRule{{
		Action:    v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}},
	}}}
	spec := &v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways}
	for _, tc := range []struct {
		code int32
		want bool
	}{{42, true}, {1, false}, {0, false}} {
		if got := shouldRestart(&c, spec, tc.code); got != tc.want {
			t.Errorf("exit %d: restart %v, want %v", tc.code, got, tc.want)
		}
	}
	if !shouldRestart(&v1.Container{}, &v1.PodSpec{}, 0) {
		t.Error("empty restart policy must mean Always")
	}
}
