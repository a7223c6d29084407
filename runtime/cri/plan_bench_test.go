package cri

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/runtime"
)

// BenchmarkPlanSync plans the steady state of a running pod with an init
// container, a sidecar and two regular containers: the periodic sync's
// cost of deciding, before any runtime call.
func BenchmarkPlanSync(b *testing.B) {
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", Name: "web", Namespace: "ns"}}
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Image: "img"}, {Name: "sidecar", Image: "img", RestartPolicy: &always}}
	pod.Spec.Containers = []v1.Container{{Name: "a", Image: "img"}, {Name: "b", Image: "img"}}
	st := &runtime.PodStatus{ID: "u1", Name: "web", Namespace: "ns",
		SandboxStatuses: []*runtime.SandboxStatus{{ID: "s1", State: runtime.SandboxStateReady, CreatedAt: time.Unix(100, 0)}}}
	for i, c := range append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		cs := &runtime.ContainerStatus{ID: runtime.ContainerID{ID: c.Name}, Name: c.Name, State: runtime.ContainerStateRunning,
			CreatedAt: time.Unix(int64(101+i), 0), Hash: runtime.HashContainer(&c)}
		if i == 0 {
			cs.State = runtime.ContainerStateExited
		}
		st.ContainerStatuses = append([]*runtime.ContainerStatus{cs}, st.ContainerStatuses...)
	}
	in := planInput{pod: pod, status: st, backOff: fakeBackOff{}, now: time.Unix(200, 0)}
	if p := planSync(in); !p.Initialized || p.Finished || p.Containers[0].Action != actKeep {
		b.Fatalf("unexpected plan: %s", p)
	}
	b.ReportAllocs()
	for b.Loop() {
		planSync(in)
	}
}
