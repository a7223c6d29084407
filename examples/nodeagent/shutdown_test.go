package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/agent/shutdown"
	"github.com/podlife/podlife/test/apitest"
)

func TestShutdownFlags(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil || c.rootDir != "" || c.shutdownGracePeriod != 0 || c.shutdownGracePeriodCriticalPods != 0 {
		t.Errorf("defaults: %+v, %v", c, err)
	}
	c, err = parseFlags([]string{"--root-dir", "rel", "--shutdown-grace-period", "30s", "--shutdown-grace-period-critical-pods", "10s"}, io.Discard)
	if err != nil || !filepath.IsAbs(c.rootDir) || c.shutdownGracePeriod != 30*time.Second || c.shutdownGracePeriodCriticalPods != 10*time.Second {
		t.Errorf("flags: %+v, %v", c, err)
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	byPriority := write("prio.yaml", `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
maxPods: 50
podLogsDir: /var/log/pods
shutdownGracePeriodByPodPriority:
- priority: 100000
  shutdownGracePeriodSeconds: 20
- priority: 0
  shutdownGracePeriodSeconds: 10
`)
	c, err = parseFlags([]string{"--config", byPriority}, io.Discard)
	want := []shutdown.PriorityGracePeriod{{Priority: 100000, ShutdownGracePeriodSeconds: 20}, {Priority: 0, ShutdownGracePeriodSeconds: 10}}
	if err != nil || !cmp.Equal(c.shutdownByPriority, want) || !cmp.Equal(c.configIgnored, []string{"maxPods"}) || c.podLogsDir != "/var/log/pods" {
		t.Errorf("--config by priority: %+v, %v", c, err)
	}
	periods := write("periods.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nshutdownGracePeriod: 1m\nshutdownGracePeriodCriticalPods: 20s\n")
	c, err = parseFlags([]string{"--config", periods, "--shutdown-grace-period-critical-pods", "5s"}, io.Discard)
	if err != nil || c.shutdownGracePeriod != time.Minute || c.shutdownGracePeriodCriticalPods != 5*time.Second {
		t.Errorf("--config with a flag over it: %+v, %v", c, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--shutdown-grace-period", "10s", "--shutdown-grace-period-critical-pods", "20s"}, "must not exceed"},
		{[]string{"--shutdown-grace-period", "-1s"}, "must not be negative"},
		{[]string{"--shutdown-grace-period", "500ms"}, "at least 1s"},
		{[]string{"--config", byPriority, "--shutdown-grace-period", "10s"}, "exclude each other"},
		{[]string{"--config", filepath.Join(dir, "missing.yaml")}, "no such file"},
		{[]string{"--config", write("typo.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nshutdownGracePeriods: 1m\n")}, "unknown field"},
		{[]string{"--config", write("kind.yaml", "apiVersion: v1\nkind: Pod\n")}, "want kubelet.config.k8s.io/v1beta1"},
	} {
		if _, err := parseFlags(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

// nodeagent --root-dir ROOT --pod-logs-dir LOGS --shutdown-grace-period 10s
// --shutdown-grace-period-critical-pods 4s, as a node of a real cluster:
// its pods' folders are under ROOT/pods, their logs under LOGS; SIGUSR1 stops its pod (the static
// pod's mirror says Failed, Terminated), marks the Node not ready, keeps
// the shutdown's times in ROOT, and the agent exits.
func TestShutdownSignal(t *testing.T) {
	api := apitest.New(t)
	const name = "shut-2"
	api.DeleteNode(name)
	api.DeleteNodeAtCleanup(t, name)
	manifests, root, logs := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(manifests, "web.yaml"), []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n  - name: main\n    image: localhost/podlife/pause:1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := parseFlags(append([]string{"--kubeconfig", api.NodeKubeconfig(t, name), "--node-name", name, "--manifests", manifests, "--listen", "127.0.0.1:0",
		"--port", "-1", "--root-dir", root, "--pod-logs-dir", logs, "--shutdown-grace-period", "10s", "--shutdown-grace-period-critical-pods", "4s"}, testHostArgs...), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	done := make(chan error, 1)
	go func() { done <- serveWith(ctx, c, testr.NewWithOptions(t, testr.Options{Verbosity: 1}), sigs) }()
	mirror := "web-" + name
	t.Cleanup(func() {
		_ = api.Admin.CoreV1().Pods("default").Delete(context.Background(), mirror, metav1.DeleteOptions{})
	})
	var uid string
	api.Eventually(t, 60*time.Second, "mirror pod Running", func() (bool, error) {
		p, err := api.Admin.CoreV1().Pods("default").Get(ctx, mirror, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		uid = p.Annotations[v1.MirrorPodAnnotationKey]
		return p.Status.Phase == v1.PodRunning, nil
	})
	// The static pod's folder is under ROOT/pods, its logs under
	// --pod-logs-dir.
	if _, err := os.Stat(filepath.Join(root, "pods", uid, "etc-hosts")); err != nil {
		t.Errorf("pod folder not under --root-dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(logs, "default_"+mirror+"_"+uid, "main", "0.log")); err != nil {
		t.Errorf("log not under --pod-logs-dir: %v", err)
	}

	start := time.Now()
	sigs <- syscall.SIGUSR1
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the agent did not exit after SIGUSR1")
	}
	if took := time.Since(start); took > 10*time.Second+5*time.Second {
		t.Errorf("shutdown and exit took %s, budget 10s", took)
	}
	p, err := api.Admin.CoreV1().Pods("default").Get(ctx, mirror, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != v1.PodFailed || p.Status.Reason != "Terminated" {
		t.Errorf("mirror pod: %s %q, want Failed, Terminated", p.Status.Phase, p.Status.Reason)
	}
	n, err := api.Admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == v1.NodeReady && (cond.Status != v1.ConditionFalse || cond.Message != "node is shutting down") {
			t.Errorf("Ready: %+v", cond)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "graceful_node_shutdown_state")); err != nil {
		t.Errorf("shutdown state not kept: %v", err)
	}
}
