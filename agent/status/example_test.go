package status_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podlife/podlife/agent/status"
)

// noContainers says that no pod has running containers.
type noContainers struct{}

func (noContainers) CouldHaveRunningContainers(types.UID) bool { return false }

func Example() {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"}}
	client := fake.NewClientset(pod)
	m, err := status.New(status.Options{Client: client, PodStates: noContainers{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()

	// Returns at once; the write happens in the background.
	_ = m.SetPodStatus(ctx, pod, nil, v1.PodStatus{Phase: v1.PodRunning})
	for m.Pending() > 0 {
		time.Sleep(time.Millisecond)
	}
	got, _ := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	fmt.Println("phase in the API:", got.Status.Phase)
	for _, a := range client.Actions() {
		if a.GetVerb() != "get" {
			fmt.Println("request:", a.GetVerb(), a.GetSubresource())
		}
	}
	cancel()
	<-done
	// Output:
	// phase in the API: Running
	// request: patch status
}
