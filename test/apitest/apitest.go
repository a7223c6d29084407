// Package apitest connects tests to the real Kubernetes control plane that
// scripts/apiserver/start.sh starts (etcd, kube-apiserver with Node,RBAC
// authorization and NodeRestriction, controller-manager, scheduler).
//
// Tests that need it call New(t): it skips the test unless the environment
// variable PODLIFE_API_DIR names the script's folder (API_DIR, by default
// /tmp/podlife-api), and otherwise gives an admin client and, per node name,
// the node's own credentials (user system:node:NAME), so that an agent under
// test has exactly a kubelet's rights:
//
//	api := apitest.New(t)
//	cfg := api.NodeConfig(t, "e2e-1") // *rest.Config of system:node:e2e-1
//	ns := api.Namespace(t)            // a fresh namespace, deleted at cleanup
//
// Node names must be among the script's API_NODES (.ci/run names them).
// Tests of different packages run at the same time against one control
// plane: each test uses its own node names and namespaces, pins its pods to
// its own nodes, and deletes what it made.
package apitest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// DirEnv names the environment variable that points tests at the control
// plane's folder.
const DirEnv = "PODLIFE_API_DIR"

// API is a running control plane.
type API struct {
	// Dir is the script's API_DIR.
	Dir string
	// Admin is a cluster-admin client.
	Admin kubernetes.Interface
	// AdminConfig is the admin client's config.
	AdminConfig *rest.Config
}

// New returns the control plane named by PODLIFE_API_DIR, or skips the test.
func New(t testing.TB) *API {
	t.Helper()
	dir := os.Getenv(DirEnv)
	if dir == "" {
		t.Skip(DirEnv + " is not set: skipping a test against a real control plane " +
			"(start one with `bash scripts/apiserver/start.sh` and set " + DirEnv + "=/tmp/podlife-api)")
	}
	cfg, err := LoadConfig(filepath.Join(dir, "admin.kubeconfig"))
	if err != nil {
		t.Fatalf("apitest: %v", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("apitest: admin client: %v", err)
	}
	return &API{Dir: dir, Admin: client, AdminConfig: cfg}
}

// LoadConfig reads a kubeconfig file into a rest.Config with the kubelet's
// client rate limits (QPS 50, burst 100).
func LoadConfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", path, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}

// NodeKubeconfig returns the path of the kubeconfig of system:node:name; it
// fails the test when the script made no credential for that name.
func (a *API) NodeKubeconfig(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(a.Dir, "node-"+name+".kubeconfig")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("apitest: no credential for node %q (start the control plane with API_NODES naming it): %v", name, err)
	}
	return p
}

// NodeConfig returns the rest.Config of system:node:name.
func (a *API) NodeConfig(t testing.TB, name string) *rest.Config {
	t.Helper()
	cfg, err := LoadConfig(a.NodeKubeconfig(t, name))
	if err != nil {
		t.Fatalf("apitest: %v", err)
	}
	return cfg
}

// NodeClient returns a client with the credentials of system:node:name.
func (a *API) NodeClient(t testing.TB, name string) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(a.NodeConfig(t, name))
	if err != nil {
		t.Fatalf("apitest: node client: %v", err)
	}
	return c
}

// Namespace creates a namespace with a random name, waits for its default
// service account (pods are refused until it exists), and deletes the
// namespace when the test ends.
func (a *API) Namespace(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	name := "t-" + strings.ToLower(rand.String(8))
	if _, err := a.Admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("apitest: create namespace: %v", err)
	}
	t.Cleanup(func() {
		_ = a.Admin.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	a.Eventually(t, 60*time.Second, "default service account of "+name, func() (bool, error) {
		_, err := a.Admin.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	return name
}

// DeleteNodeAtCleanup deletes the Node and its Lease (as admin) when the test
// ends, so that the next test using the name starts from nothing.
func (a *API) DeleteNodeAtCleanup(t testing.TB, name string) {
	t.Helper()
	t.Cleanup(func() { a.DeleteNode(name) })
}

// DeleteNode deletes the Node and its Lease, ignoring NotFound.
func (a *API) DeleteNode(name string) {
	ctx := context.Background()
	_ = a.Admin.CoordinationV1().Leases(v1.NamespaceNodeLease).Delete(ctx, name, metav1.DeleteOptions{})
	_ = a.Admin.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
}

// Eventually calls cond every 200 ms until it returns true, failing the test
// with what, the last error and the elapsed time when timeout passes first.
// An error from cond does not stop the wait: the control plane answers
// errors while things settle.
func (a *API) Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		if time.Now().After(deadline) {
			t.Fatalf("apitest: %s: not true after %s (last error: %v)", what, time.Since(start).Round(time.Millisecond), last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Kubectl returns the kubectl the control plane script built (API_KUBECTL in
// API_DIR/env); it fails the test when there is none, since a running
// control plane always has it.
func (a *API) Kubectl(t testing.TB) string {
	t.Helper()
	env, err := os.ReadFile(filepath.Join(a.Dir, "env"))
	if err != nil {
		t.Fatalf("apitest: %v", err)
	}
	for _, line := range strings.Split(string(env), "\n") {
		if path, ok := strings.CutPrefix(line, "API_KUBECTL="); ok && path != "" {
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("apitest: kubectl: %v", err)
			}
			return path
		}
	}
	t.Fatalf("apitest: no API_KUBECTL in %s", filepath.Join(a.Dir, "env"))
	return ""
}
