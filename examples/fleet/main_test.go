package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/podlife/podlife/test/apitest"
)

func TestParse(t *testing.T) {
	var stderr bytes.Buffer
	c, err := parse([]string{"--kubeconfig", "k", "--nodes", "3", "--prefix", "edge-", "--cpu", "4", "--memory", "8Gi",
		"--pods", "30", "--labels", "zone=a,tier=edge", "--taints", "dedicated=edge:NoSchedule,gpu:NoExecute",
		"--event-qps", "5", "--event-burst", "10"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if c.nodes != 3 || c.prefix != "edge-" || c.capacity.Cpu().String() != "4" || c.capacity.Memory().String() != "8Gi" ||
		c.capacity.Pods().String() != "30" || c.labels["zone"] != "a" || c.labels["tier"] != "edge" || len(c.taints) != 2 ||
		c.taints[0] != (v1.Taint{Key: "dedicated", Value: "edge", Effect: v1.TaintEffectNoSchedule}) ||
		c.taints[1] != (v1.Taint{Key: "gpu", Effect: v1.TaintEffectNoExecute}) || c.eventQPS != 5 || c.eventBurst != 10 {
		t.Fatalf("parsed %+v", c)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--kubeconfig is required"},
		{[]string{"--kubeconfig", "k", "--cpu", "four"}, `--cpu "four"`},
		{[]string{"--kubeconfig", "k", "--labels", "zone"}, `--labels: "zone": want KEY=VALUE`},
		{[]string{"--kubeconfig", "k", "--taints", "a=b:Sometimes"}, `EFFECT one of`},
		{[]string{"--kubeconfig", "k", "extra"}, `unexpected arguments`},
		{[]string{"--kubeconfig", "k", "--event-qps", "0"}, `must be positive`},
	} {
		if _, err := parse(tc.args, &stderr); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q): %v, want an error with %q", tc.args, err, tc.want)
		}
	}
	if code := run([]string{"--nodes", "2"}, &stderr, &stderr); code != 2 {
		t.Errorf("run without --kubeconfig: exit code %d, want 2", code)
	}
}

// syncBuffer is a bytes.Buffer safe for the command's writes and the
// test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The command against the real control plane, as a user types it: its
// nodes register with the capacity, labels and taints asked for, it says
// when they are all Ready, and it stops when told.
func TestFleetCommand(t *testing.T) {
	api := apitest.New(t)
	prefix := "cmd-" + strings.ToLower(rand.String(5)) + "-"
	names := []string{prefix + "0", prefix + "1"}
	for _, n := range names {
		api.DeleteNodeAtCleanup(t, n)
	}
	c, err := parse([]string{"--kubeconfig", filepath.Join(api.Dir, "admin.kubeconfig"), "--nodes", "2", "--prefix", prefix,
		"--cpu", "4", "--pods", "30", "--labels", "tier=edge", "--taints", "dedicated=edge:NoSchedule",
		"--root-dir", t.TempDir()}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout syncBuffer
	done := make(chan error, 1)
	go func() { done <- serve(ctx, c, &stdout, logr.Discard()) }()
	api.Eventually(t, 60*time.Second, "the command says its 2 nodes are Ready", func() (bool, error) {
		return strings.Contains(stdout.String(), "2 nodes Ready in "), nil
	})
	for _, name := range names {
		n, err := api.Admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n.Status.Capacity.Cpu().String() != "4" || n.Status.Capacity.Pods().String() != "30" || n.Labels["tier"] != "edge" ||
			len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "dedicated" {
			t.Errorf("node %s: capacity %v, labels %v, taints %v", name, n.Status.Capacity, n.Labels, n.Spec.Taints)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the command did not stop")
	}
}
