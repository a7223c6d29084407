package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/test/apitest"
)

// nodeagent --kubeconfig FILE --node-name N joins a real cluster: it
// registers its Node, which turns Ready, and its static pod's mirror pod
// shows the pod Running.
// testHostArgs are the flags of every agent these tests run on this
// machine, beside the test's own: the disk is shared with build caches and
// other tests, so the disk eviction thresholds (nodefs.available<10%,
// imagefs.available<15%) and image garbage collection (from 85 % used)
// could take it for a full node's and refuse pods or remove the images other
// tests imported (they cannot be pulled again). The memory threshold stays.
// Eviction and image GC have their own tests, with supplied signals.
var testHostArgs = []string{"--eviction-hard", "memory.available<100Mi", "--image-gc-high-threshold", "100"}

func TestJoinRealCluster(t *testing.T) {
	api := apitest.New(t)
	const name = "podlife-node"
	api.DeleteNode(name)
	api.DeleteNodeAtCleanup(t, name)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: main\n    image: localhost/podlife/pause:1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := parseFlags(append([]string{"--kubeconfig", api.NodeKubeconfig(t, name), "--node-name", name, "--manifests", dir, "--listen", "127.0.0.1:0",
		"--port", "0", "--address", "127.0.0.1"}, testHostArgs...), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, c, testr.NewWithOptions(t, testr.Options{Verbosity: 1})) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		// The mirror pod goes with the Node (owner reference); delete it
		// now so that the next run starts clean.
		_ = api.Admin.CoreV1().Pods("default").Delete(context.Background(), "web-"+name, metav1.DeleteOptions{})
	})
	api.Eventually(t, 30*time.Second, "node Ready", func() (bool, error) {
		n, err := api.Admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady {
				return c.Status == v1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	api.Eventually(t, 30*time.Second, "mirror pod Running", func() (bool, error) {
		p, err := api.Admin.CoreV1().Pods("default").Get(ctx, "web-"+name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodRunning && p.Annotations[v1.MirrorPodAnnotationKey] != "", err
	})
}

// Credentials the API server refuses are one error at start-up naming the
// file.
func TestRefusedCredentials(t *testing.T) {
	api := apitest.New(t)
	data, err := os.ReadFile(api.NodeKubeconfig(t, "podlife-node"))
	if err != nil {
		t.Fatal(err)
	}
	bogus := regexp.MustCompile(`token: "?[0-9a-f]+"?`).ReplaceAll(data, []byte(`token: "0000"`))
	path := filepath.Join(t.TempDir(), "bogus.kubeconfig")
	if err := os.WriteFile(path, bogus, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, _, err = clusterClients(context.Background(), path, "podlife-node", 50, 100, prometheus.NewRegistry())
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("err = %v, want Unauthorized naming %s", err, path)
	}
}
