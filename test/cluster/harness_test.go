package cluster_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
	"github.com/podlife/podlife/test/apitest"
)

// testImage is the image of every test pod; fakecri "pulls" any name.
const testImage = "localhost/podlife/pause:1.0"

// selectorLabel is the node label test workloads select their nodes by, so
// that no pod of a test lands on another test's node.
const selectorLabel = "podlife.test/e2e"

// testNode is one node of the cluster: a fakecri runtime that outlives the
// agents started on it (as containers outlive a kubelet restart) and the
// agent currently running, if any.
type testNode struct {
	name   string
	api    *apitest.API
	srv    *fakecri.Server
	rt     *cri.Runtime
	labels map[string]string

	a      *agent.Agent
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
}

// newNode makes the runtime of node name; the Node and its Lease are
// deleted when the test ends.
func newNode(t testing.TB, api *apitest.API, name string, labels map[string]string) *testNode {
	t.Helper()
	api.DeleteNode(name) // a previous test's leftovers
	api.DeleteNodeAtCleanup(t, name)
	srv := fakecri.New(fakecri.Options{})
	endpoint, err := srv.StartUnix(filepath.Join(t.TempDir(), "cri.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	rt, err := cri.New(cri.Options{Endpoint: endpoint, Timeout: 20 * time.Second, VolumeRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return &testNode{name: name, api: api, srv: srv, rt: rt, labels: labels}
}

// start runs an agent for the node with the node's credentials (through
// cfg when it is not nil, e.g. a proxy's config), stopped when the test
// ends.
func (n *testNode) start(t *testing.T, cfg *rest.Config) {
	t.Helper()
	if cfg == nil {
		cfg = n.api.NodeConfig(t, n.name)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.reg = prometheus.NewRegistry()
	n.a, err = agent.New(agent.Options{
		Runtime:  n.rt,
		NodeName: n.name,
		Cluster: &agent.Cluster{
			Client: client,
			Labels: n.labels,
		},
		Registerer:           n.reg,
		Logger:               testr.NewWithOptions(t, testr.Options{Verbosity: 1}).WithName(n.name),
		HousekeepingInterval: 500 * time.Millisecond,
		RelistInterval:       200 * time.Millisecond,
		BackOffPeriod:        500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.done = cancel, make(chan error, 1)
	go func(a *agent.Agent) { n.done <- a.Run(ctx) }(n.a)
	t.Cleanup(func() { n.stop(t) })
}

// stop ends the agent's Run and waits for it; the runtime keeps its pods.
func (n *testNode) stop(t *testing.T) {
	t.Helper()
	if n.done == nil {
		return
	}
	n.cancel()
	select {
	case err := <-n.done:
		if err != nil {
			t.Errorf("%s: Run: %v", n.name, err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: Run did not return after its context ended", n.name)
	}
	n.done = nil
}

// waitReady waits for the node's Ready condition to be True in the API.
func waitReady(t testing.TB, api *apitest.API, name string, timeout time.Duration) *v1.Node {
	t.Helper()
	var node *v1.Node
	api.Eventually(t, timeout, "node "+name+" Ready", func() (bool, error) {
		var err error
		node, err = api.Admin.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == v1.NodeReady {
				return c.Status == v1.ConditionTrue, fmt.Errorf("Ready is %s: %s", c.Status, c.Message)
			}
		}
		return false, nil
	})
	return node
}

// leaseRenewTime returns the renew time of the node's Lease.
func leaseRenewTime(api *apitest.API, name string) (time.Time, error) {
	l, err := api.Admin.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return time.Time{}, err
	}
	if l.Spec.RenewTime == nil {
		return time.Time{}, fmt.Errorf("lease %s has no renew time", name)
	}
	return l.Spec.RenewTime.Time, nil
}

// pod returns a pod of one container running args, with grace seconds of
// termination grace, bound to nodeName when it is not empty.
func pod(name, nodeName string, grace int64, args ...string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{
			NodeName:                      nodeName,
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []v1.Container{{Name: "app", Image: testImage, Args: args}},
		},
	}
}

func createPod(t *testing.T, api *apitest.API, ns string, p *v1.Pod) *v1.Pod {
	t.Helper()
	out, err := api.Admin.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", p.Name, err)
	}
	return out
}

// isRunningReady reports whether the pod is Running with Ready true.
func isRunningReady(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodRunning || p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// waitPodRunning waits for the pod to be Running and Ready in the API.
func waitPodRunning(t *testing.T, api *apitest.API, ns, name string, timeout time.Duration) *v1.Pod {
	t.Helper()
	var p *v1.Pod
	api.Eventually(t, timeout, "pod "+ns+"/"+name+" Running and Ready", func() (bool, error) {
		var err error
		p, err = api.Admin.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return isRunningReady(p), fmt.Errorf("phase %s, conditions %v", p.Status.Phase, p.Status.Conditions)
	})
	return p
}

// waitPodGone waits until the pod (this UID) is gone from the API.
func waitPodGone(t *testing.T, api *apitest.API, ns, name string, uid types.UID, timeout time.Duration) {
	t.Helper()
	api.Eventually(t, timeout, "pod "+ns+"/"+name+" gone", func() (bool, error) {
		p, err := api.Admin.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return p.UID != uid, fmt.Errorf("still there: phase %s, deletion %v", p.Status.Phase, p.DeletionTimestamp)
	})
}

// deployment returns a Deployment of replicas pods that run only on nodes
// labelled selectorLabel=value.
func deployment(name, value string, replicas int32) *appsv1.Deployment {
	grace := int64(2)
	sel := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: v1.PodSpec{
					NodeSelector:                  map[string]string{selectorLabel: value},
					TerminationGracePeriodSeconds: &grace,
					Containers:                    []v1.Container{{Name: "app", Image: testImage}},
				},
			},
		},
	}
}

// pods lists the pods of the Deployment's label app=name.
func pods(t *testing.T, api *apitest.API, ns, name string) []v1.Pod {
	t.Helper()
	list, err := api.Admin.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(map[string]string{"app": name}).String(),
	})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	return list.Items
}

// runningByNode counts the pods of app=name that are Running and Ready, by
// node.
func runningByNode(t *testing.T, api *apitest.API, ns, name string) (map[string]int, int) {
	t.Helper()
	by, total := map[string]int{}, 0
	for _, p := range pods(t, api, ns, name) {
		if isRunningReady(&p) {
			by[p.Spec.NodeName]++
			total++
		}
	}
	return by, total
}
