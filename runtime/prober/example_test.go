package prober_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/runtime/prober"
)

// A readiness probe turns a container ready; the agent syncs the pod on
// each Update and reads readiness into the status.
func Example() {
	updates := make(chan prober.Update, 1)
	m, err := prober.New(prober.Options{
		// The runtime: *cri.Runtime in an agent. Here every command passes.
		Exec: prober.ExecFunc(func(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
			return []byte("ok"), nil, 0, nil
		}),
		OnResult: func(u prober.Update) { updates <- u },
		Rand:     func() float64 { return 0 }, // no jitter, for the example
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()

	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name:           "app",
			ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"check"}}}},
		}}},
	}
	// After a sync: the container runs as instance "c1".
	m.SetContainers(pod, "10.0.0.5", map[string]prober.RunningContainer{"app": {ID: "c1", StartedAt: time.Now()}})
	u := <-updates
	fmt.Println(u.ContainerName, u.Probe, u.Result)

	status := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{
		Name: "app", ContainerID: "containerd://c1",
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{}},
	}}}
	m.UpdatePodStatus(pod.UID, &status)
	fmt.Println("ready:", status.ContainerStatuses[0].Ready, "started:", *status.ContainerStatuses[0].Started)

	m.RemovePod(pod.UID) // the pod terminated
	cancel()
	fmt.Println(<-done)
	// Output:
	// app Readiness Success
	// ready: true started: true
	// <nil>
}
