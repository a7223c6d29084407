package node_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/podlife/podlife/agent/node"
	"github.com/podlife/podlife/test/apitest"
)

// runReal runs a Controller for name with the node's own credentials until
// the returned stop is called.
func runReal(t *testing.T, api *apitest.API, name string, labels map[string]string) (c *node.Controller, stop func()) {
	t.Helper()
	cfg, err := node.LoadClientConfig(api.NodeKubeconfig(t, name), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err = node.New(node.Options{Client: client, NodeName: name, Runtime: &fakeRuntime{}, Labels: labels,
		Taints: []v1.Taint{{Key: "podlife.test/t", Effect: v1.TaintEffectPreferNoSchedule}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(stop)
	return c, stop
}

// As system:node:NAME under the Node authorizer and NodeRestriction, the
// Controller registers its Node, which turns Ready, renews its Lease, and
// adopts the Node after a restart without losing what the admin set.
func TestRealAPIServerRegistersAndAdopts(t *testing.T) {
	api := apitest.New(t)
	const name = "node-t1"
	api.DeleteNode(name)
	api.DeleteNodeAtCleanup(t, name)
	ctx := context.Background()
	c, stop := runReal(t, api, name, map[string]string{"podlife.test/pool": "a"})
	<-c.Registered()
	var n *v1.Node
	api.Eventually(t, 30*time.Second, "Ready", func() (bool, error) {
		var err error
		n, err = api.Admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return err == nil && cond(n, v1.NodeReady).Status == v1.ConditionTrue, err
	})
	if n.Status.Capacity.Pods().Value() != 110 || n.Status.NodeInfo.KubeletVersion != node.Version() || n.Labels["podlife.test/pool"] != "a" {
		t.Errorf("node = %+v", n)
	}
	var renew time.Time
	api.Eventually(t, 30*time.Second, "lease owned by the node", func() (bool, error) {
		l, err := api.Admin.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		renew = l.Spec.RenewTime.Time
		return len(l.OwnerReferences) == 1 && l.OwnerReferences[0].UID == n.UID, nil
	})
	api.Eventually(t, 25*time.Second, "lease renewed", func() (bool, error) {
		l, err := api.Admin.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime.After(renew), err
	})

	stop()
	// An admin labels and annotates the node meanwhile.
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"labels": map[string]string{"admin-label": "keep"}, "annotations": map[string]string{"admin-note": "keep"}}})
	if _, err := api.Admin.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	c2, _ := runReal(t, api, name, map[string]string{"podlife.test/pool": "b"})
	<-c2.Registered()
	api.Eventually(t, 30*time.Second, "adopted with the new label", func() (bool, error) {
		got, err := api.Admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if got.UID != n.UID {
			t.Fatalf("node recreated: %s -> %s", n.UID, got.UID)
		}
		return got.Labels["podlife.test/pool"] == "b" && got.Labels["admin-label"] == "keep" && got.Annotations["admin-note"] == "keep" &&
			len(got.Spec.Taints) > 0 && cond(got, v1.NodeReady).Status == v1.ConditionTrue, nil
	})
}

// With the API server down at start-up, the Controller registers once it
// is back.
func TestRealAPIServerDownAtStart(t *testing.T) {
	api := apitest.New(t)
	const name = "node-t2"
	api.DeleteNode(name)
	api.DeleteNodeAtCleanup(t, name)
	cfg := api.NodeConfig(t, name)
	proxy := apitest.NewProxy(t, cfg)
	proxy.Down()
	// Count the requests the Controller tries, failed ones included.
	var tried atomic.Int64
	pcfg := proxy.Config(cfg)
	pcfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			tried.Add(1)
			return rt.RoundTrip(r)
		})
	})
	c := startController(t, pcfg, node.Options{NodeName: name, Runtime: &fakeRuntime{}, MaxBackOff: time.Second})
	api.Eventually(t, 20*time.Second, "three failed attempts", func() (bool, error) { return tried.Load() >= 3, nil })
	select {
	case <-c.Registered():
		t.Fatal("registered while the API server was down")
	default:
	}
	if err := proxy.Up(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Registered():
	case <-time.After(20 * time.Second):
		t.Fatal("not registered after the API server came back")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Under the Node authorizer, the Controller lists and watches its own Node
// (a field selector on its name) and so writes its status without reading
// the Node: no GET of it once the watch has listed it, and a Ready changed
// by someone else is repaired from what the watch delivers.
func TestRealStatusFromTheNodeWatch(t *testing.T) {
	api := apitest.New(t)
	const name = "node-t3"
	api.DeleteNode(name)
	api.DeleteNodeAtCleanup(t, name)
	cfg := api.NodeConfig(t, name)
	var gets, watches atomic.Int64
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && r.URL.Path == "/api/v1/nodes/"+name {
				gets.Add(1)
			}
			if r.Method == http.MethodGet && r.URL.Path == "/api/v1/nodes" && r.URL.Query().Get("watch") == "true" {
				watches.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	startController(t, cfg, node.Options{NodeName: name, Runtime: &fakeRuntime{}, StatusUpdateFrequency: 200 * time.Millisecond})
	api.Eventually(t, 30*time.Second, "the Node watched", func() (bool, error) { return watches.Load() >= 1, nil })
	// Give the status loop time to read from the watch: every period after
	// the first that found it listed makes no GET.
	api.Eventually(t, 30*time.Second, "Ready", func() (bool, error) {
		n, err := api.Admin.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && cond(n, v1.NodeReady).Status == v1.ConditionTrue, err
	})
	before, since := gets.Load(), time.Now()
	// Someone (the node lifecycle controller, say) marks it Unknown; the
	// Controller may write meanwhile, so the update retries on a conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := api.Admin.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == v1.NodeReady {
				n.Status.Conditions[i].Status = v1.ConditionUnknown
			}
		}
		_, err = api.Admin.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	api.Eventually(t, 30*time.Second, "Ready repaired", func() (bool, error) {
		n, err := api.Admin.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && cond(n, v1.NodeReady).Status == v1.ConditionTrue, err
	})
	// Ten status periods at least; a GET of the loop's first periods, while
	// the watch's list was still being delivered, may fall in them.
	api.Eventually(t, 30*time.Second, "ten status periods", func() (bool, error) { return time.Since(since) >= 2*time.Second, nil })
	if got := gets.Load() - before; got > 1 {
		t.Errorf("%d GETs of the Node in ten status periods and a repair, want none (read from the watch)", got)
	}
}

// startController runs a Controller with opts, over a client of cfg, until
// the test ends.
func startController(t *testing.T, cfg *rest.Config, opts node.Options) *node.Controller {
	t.Helper()
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts.Client = client
	c, err := node.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return c
}

// status.images, as the kubelet writes it, is accepted from the node's
// own identity and replaced when the image list changes.
func TestRealNodeImages(t *testing.T) {
	api := apitest.New(t)
	const name = "imagegc-1"
	api.DeleteNode(name)
	api.DeleteNodeAtCleanup(t, name)
	var mu sync.Mutex
	images := []v1.ContainerImage{
		{Names: []string{"registry.k8s.io/big@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "registry.k8s.io/big:1"}, SizeBytes: 9 << 20},
		{Names: []string{"docker.io/library/small:1"}, SizeBytes: 1 << 20},
	}
	startController(t, api.NodeConfig(t, name), node.Options{NodeName: name, Runtime: &fakeRuntime{},
		StatusUpdateFrequency: 200 * time.Millisecond, Images: func() []v1.ContainerImage {
			mu.Lock()
			defer mu.Unlock()
			return images
		}})
	get := func() []v1.ContainerImage {
		n, err := api.Admin.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return n.Status.Images
	}
	api.Eventually(t, 30*time.Second, "status.images", func() (bool, error) { return len(get()) == 2, nil })
	mu.Lock()
	images = images[:1]
	mu.Unlock()
	api.Eventually(t, 30*time.Second, "status.images after a removal", func() (bool, error) {
		im := get()
		return len(im) == 1 && im[0].SizeBytes == 9<<20, nil
	})
}
