package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/podworker/podworkertest"
)

// A kubeconfig that does not parse, points nowhere or lacks rights is one
// clear error at start-up that names the file and the cause.
func TestClusterClientsErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.kubeconfig")
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nkind: Config\nclusters: [not: valid\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.kubeconfig")
	for _, path := range []string{bad, missing} {
		_, _, _, err := clusterClients(context.Background(), path, "n1", 50, 100, prometheus.NewRegistry())
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: err = %v, want an error naming the file", path, err)
		}
	}
}

// The agent against an API server (client-go's fake clientset): a static
// pod gets a mirror pod carrying its status; a pod bound to the node runs,
// and once deleted it is terminated and removed from the API only then.
func TestAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, _, closeRuntime, err := openRuntime("", false, testr.New(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeRuntime()
	client := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "edge", UID: "node-uid"}})
	// The fake does not assign UIDs as an API server does.
	client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, kruntime.Object, error) {
		if p, ok := action.(k8stesting.CreateAction).GetObject().(*v1.Pod); ok && p.UID == "" {
			p.UID = types.UID("api-assigned-" + p.Name)
		}
		return false, nil, nil
	})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: main\n    image: localhost/podlife/pause:1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := agent.Options{Runtime: rt, NodeName: "edge", ManifestPath: dir, Logger: testr.New(t),
		RelistInterval: 50 * time.Millisecond, HousekeepingInterval: 100 * time.Millisecond}
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	withCluster(&opts, c, client, client)
	a, err := agent.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	defer func() { stop(); <-done }()
	pods := client.CoreV1().Pods("default")

	podworkertest.WaitFor(t, 20*time.Second, "mirror pod with the static pod's status", func() bool {
		m, err := pods.Get(ctx, "web-edge", metav1.GetOptions{})
		return err == nil && m.Annotations[v1.MirrorPodAnnotationKey] != "" && m.Status.Phase == v1.PodRunning
	})

	grace := int64(1)
	api := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "default", UID: "api-pod-uid"},
		Spec: v1.PodSpec{NodeName: "edge", TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "main", Image: "localhost/podlife/pause:1.0"}}}}
	if _, err := pods.Create(ctx, api, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	podworkertest.WaitFor(t, 20*time.Second, "api pod running", func() bool {
		p, err := pods.Get(ctx, "job", metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodRunning
	})
	// A graceful delete, as the API server records it.
	p, err := pods.Get(ctx, "job", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &grace
	if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	podworkertest.WaitFor(t, 20*time.Second, "api pod deleted once finished", func() bool {
		_, err := pods.Get(ctx, "job", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if a.Workers().CouldHaveRunningContainers("api-pod-uid") {
		t.Error("the API pod was deleted while its containers could run")
	}
}
