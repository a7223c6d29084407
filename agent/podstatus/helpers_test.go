package podstatus

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
)

// t0 is the time every test starts from; sec(n) is n seconds later.
var t0 = time.Date(2026, 12, 4, 2, 0, 0, 0, time.UTC)

func sec(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }

const testUID = types.UID("uid-1")

// newPod returns a pod of the given regular containers (restart policy
// Always), edited by the options.
func newPod(containers []string, opts ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{}
	p.Name, p.Namespace, p.UID, p.Generation = "web", "default", testUID, 1
	p.Spec.RestartPolicy = v1.RestartPolicyAlways
	for _, n := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n, Image: "img-" + n})
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withPolicy(rp v1.RestartPolicy) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.RestartPolicy = rp }
}

// withInit adds regular init containers.
func withInit(names ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		for _, n := range names {
			p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: n, Image: "img-" + n})
		}
	}
}

// withSidecar adds a restartable init container.
func withSidecar(names ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		always := v1.ContainerRestartPolicyAlways
		for _, n := range names {
			p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: n, Image: "img-" + n, RestartPolicy: &always})
		}
	}
}

// instance is a runtime container instance created at sec(at).
func instance(name string, state runtime.ContainerState, at, restarts int) *runtime.ContainerStatus {
	return &runtime.ContainerStatus{
		ID:           runtime.ContainerID{Type: "fakecri", ID: fmt.Sprintf("%s-%d", name, restarts)},
		Name:         name,
		State:        state,
		CreatedAt:    sec(at),
		StartedAt:    sec(at),
		Image:        "img-" + name,
		ImageID:      "sha256:" + name,
		RestartCount: restarts,
	}
}

func running(name string, at int) *runtime.ContainerStatus {
	return instance(name, runtime.ContainerStateRunning, at, 0)
}

func exited(name string, code, at int) *runtime.ContainerStatus {
	c := instance(name, runtime.ContainerStateExited, at, 0)
	c.ExitCode = code
	c.FinishedAt = sec(at + 1)
	return c
}

func restarted(c *runtime.ContainerStatus, restarts int) *runtime.ContainerStatus {
	c.RestartCount = restarts
	c.ID.ID = fmt.Sprintf("%s-%d", c.Name, restarts)
	return c
}

// sandboxed returns a runtime status with one ready sandbox (created at
// sec(0), IP 10.1.0.5) and the given instances.
func sandboxed(cs ...*runtime.ContainerStatus) *runtime.PodStatus {
	return &runtime.PodStatus{
		ID:                testUID,
		IPs:               []string{"10.1.0.5"},
		SandboxStatuses:   []*runtime.SandboxStatus{{ID: "sb", State: runtime.SandboxStateReady, CreatedAt: sec(0), IPs: []string{"10.1.0.5"}}},
		ContainerStatuses: cs,
	}
}

func status(list []v1.ContainerStatus, name string) v1.ContainerStatus {
	for _, s := range list {
		if s.Name == name {
			return s
		}
	}
	return v1.ContainerStatus{Name: "<missing " + name + ">"}
}

func condition(s v1.PodStatus, t v1.PodConditionType) v1.PodCondition {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.PodCondition{Type: t, Status: "<missing>"}
}

// stateOf summarises a container state: "waiting:Reason",
// "running", "terminated:Reason:code" or "none".
func stateOf(s v1.ContainerState) string {
	switch {
	case s.Waiting != nil:
		return "waiting:" + s.Waiting.Reason
	case s.Running != nil:
		return "running"
	case s.Terminated != nil:
		return fmt.Sprintf("terminated:%s:%d", s.Terminated.Reason, s.Terminated.ExitCode)
	}
	return "none"
}
