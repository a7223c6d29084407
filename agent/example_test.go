package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// An agent runs the static pods of a manifest folder on an embedded fakecri
// runtime.
func ExampleAgent() {
	dir, _ := os.MkdirTemp("", "manifests")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(`apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: main
    image: localhost/podlife/pause:1.0
`), 0o644)

	srv := fakecri.New(fakecri.Options{})
	if err := srv.StartInMemory(); err != nil {
		panic(err)
	}
	defer srv.Stop()
	rt, err := cri.New(cri.Options{Endpoint: "fakecri", Dialer: srv.DialContext, VolumeRoot: filepath.Join(dir, "volumes")})
	if err != nil {
		panic(err)
	}
	defer rt.Close()

	a, err := agent.New(agent.Options{
		Runtime:        rt,
		NodeName:       "node1",
		ManifestPath:   dir,
		Registerer:     prometheus.NewRegistry(),
		RelistInterval: 100 * time.Millisecond,
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- a.Run(ctx) }()

	err = podworkertest.Poll(10*time.Second, func() bool {
		pods := a.Pods()
		return len(pods) == 1 && pods[0].Phase == "Running"
	})
	if err != nil {
		panic(err)
	}
	for _, p := range a.Pods() {
		fmt.Println(p.Namespace, p.Name, p.Lifecycle, p.Phase, "static:", p.Static)
	}
	cancel()
	fmt.Println("Run:", <-done)
	// Output:
	// default web-node1 syncing Running static: true
	// Run: <nil>
}
