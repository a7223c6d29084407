package node_test

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podlife/podlife/agent/node"
)

// A Controller registers its Node and keeps it; here against a fake API
// server and a fake runtime.
func ExampleController() {
	client := fake.NewClientset() // a real agent: the node's own credentials (LoadClientConfig)
	c, err := node.New(node.Options{Client: client, NodeName: "edge-1", Runtime: &fakeRuntime{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	<-c.Registered()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		n, err := client.CoreV1().Nodes().Get(ctx, "edge-1", metav1.GetOptions{})
		if err == nil && len(n.Status.Conditions) == 4 {
			for _, cond := range n.Status.Conditions {
				fmt.Println(cond.Type, cond.Status, cond.Reason)
			}
			fmt.Println(n.Status.Capacity.Pods(), n.Status.NodeInfo.ContainerRuntimeVersion)
			break
		}
	}
	cancel()
	fmt.Println(<-done)
	// Output:
	// MemoryPressure False KubeletHasSufficientMemory
	// DiskPressure False KubeletHasNoDiskPressure
	// PIDPressure False KubeletHasSufficientPID
	// Ready True KubeletReady
	// 110 fakert://1.2.3
	// <nil>
}
