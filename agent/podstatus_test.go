package agent

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime"
)

func TestGenerateStatusPhase(t *testing.T) {
	spec := func(policy v1.RestartPolicy, names ...string) *v1.Pod {
		p := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: policy}}
		for _, n := range names {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n, Image: "i"})
		}
		return p
	}
	running := func(n string) *runtime.ContainerStatus {
		return &runtime.ContainerStatus{Name: n, State: runtime.ContainerStateRunning, StartedAt: time.Unix(1, 0)}
	}
	exited := func(n string, code int) *runtime.ContainerStatus {
		return &runtime.ContainerStatus{Name: n, State: runtime.ContainerStateExited, ExitCode: code}
	}
	status := func(cs ...*runtime.ContainerStatus) *runtime.PodStatus {
		return &runtime.PodStatus{ContainerStatuses: cs}
	}
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		st       *runtime.PodStatus
		terminal bool
		want     v1.PodPhase
	}{
		{"nothing yet", spec(v1.RestartPolicyAlways, "a"), nil, false, v1.PodPending},
		{"one of two started", spec(v1.RestartPolicyAlways, "a", "b"), status(running("a")), false, v1.PodPending},
		{"running", spec(v1.RestartPolicyAlways, "a", "b"), status(running("a"), exited("b", 1)), false, v1.PodRunning},
		{"always restarts", spec(v1.RestartPolicyAlways, "a"), status(exited("a", 0)), false, v1.PodRunning},
		{"on failure, succeeded", spec(v1.RestartPolicyOnFailure, "a"), status(exited("a", 0)), false, v1.PodSucceeded},
		{"on failure, failed restarts", spec(v1.RestartPolicyOnFailure, "a"), status(exited("a", 2)), false, v1.PodRunning},
		{"never, failed", spec(v1.RestartPolicyNever, "a", "b"), status(exited("a", 0), exited("b", 1)), false, v1.PodFailed},
		{"never, succeeded", spec(v1.RestartPolicyNever, "a"), status(exited("a", 0)), false, v1.PodSucceeded},
		{"terminated, all succeeded", spec(v1.RestartPolicyAlways, "a"), status(exited("a", 0)), true, v1.PodSucceeded},
		{"terminated, killed", spec(v1.RestartPolicyAlways, "a"), status(exited("a", 137)), true, v1.PodFailed},
		{"terminated, never started", spec(v1.RestartPolicyAlways, "a"), nil, true, v1.PodFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := generateStatus(tc.pod, tc.st, tc.terminal)
			if got.Phase != tc.want {
				t.Errorf("phase %s, want %s", got.Phase, tc.want)
			}
			if tc.terminal {
				for _, cs := range got.ContainerStatuses {
					if cs.State.Terminated == nil {
						t.Errorf("terminated pod with container %s not terminated: %+v", cs.Name, cs.State)
					}
				}
			}
		})
	}
}
