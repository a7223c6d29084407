package events_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podlife/podlife/agent/events"
)

// A Recorder records a pod's events to the API server while Run runs.
func ExampleRecorder() {
	client := fake.NewClientset() // in a real agent: a client of its own, with the node's credentials
	rec, err := events.New(events.Options{Client: client, NodeName: "node-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rec.Run(ctx) }()

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"}}
	// Events recorded before Run has started are dropped: record until one
	// is in the API server.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		rec.Eventf(pod, v1.EventTypeNormal, "Started", "Started container %s", "app")
		list, _ := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if len(list.Items) > 0 {
			e := list.Items[0]
			fmt.Println(e.Reason, e.Message, e.Source.Component, e.Source.Host)
			break
		}
	}
	cancel()
	fmt.Println(<-done)
	// Output:
	// Started Started container app podlife node-1
	// <nil>
}
