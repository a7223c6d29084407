package status_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podlife/podlife/agent/status"
	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/podmanager/source"
	"github.com/podlife/podlife/test/apitest"
)

// states is a PodStates whose answers the test sets; unknown pods have no
// running containers.
type states struct {
	mu      sync.Mutex
	running map[types.UID]bool
}

func (s *states) CouldHaveRunningContainers(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running[uid]
}

// node is a status Manager with the credentials of one node, fed with the
// node's pods by the agent's own API source, as the agent will run it.
type node struct {
	name     string
	m        *status.Manager
	pods     *podmanager.Manager
	reg      *prometheus.Registry
	states   *states
	apiAdmin kubernetes.Interface
}

// startNode starts the Manager and the watch; mutate may change the
// Options, given the pods the watch keeps.
func startNode(t *testing.T, api *apitest.API, name string, cfg *rest.Config, mutate func(*status.Options, *podmanager.Manager)) *node {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg, err := status.InstrumentConfig(cfg, reg, "podlife")
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := &node{name: name, pods: podmanager.New(), reg: reg, states: &states{running: map[types.UID]bool{}}, apiAdmin: api.Admin}
	opts := status.Options{
		Client:            client,
		PodStates:         n.states,
		Pods:              n.pods,
		Logger:            testr.NewWithOptions(t, testr.Options{Verbosity: 2}),
		Registerer:        reg,
		MetricsNamespace:  "podlife",
		ReconcileInterval: time.Second,
		BackoffMax:        2 * time.Second,
		RequestTimeout:    10 * time.Second,
	}
	if mutate != nil {
		mutate(&opts, n.pods)
	}
	if n.m, err = status.New(opts); err != nil {
		t.Fatal(err)
	}
	// The watch of the node's pods uses a client of its own, so that the
	// request counts are the status manager's.
	watchClient, err := kubernetes.NewForConfig(api.NodeConfig(t, name))
	if err != nil {
		t.Fatal(err)
	}
	src, err := source.NewAPI(source.SinkFunc(func(_ context.Context, pods []*v1.Pod) error {
		n.pods.SetPods(pods)
		return nil
	}), source.APIOptions{Client: watchClient, NodeName: name})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = src.Run(ctx) }()
	go func() { defer wg.Done(); _ = n.m.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return n
}

// ensureNode creates the Node object (as admin) so that the pod garbage
// collector leaves pods bound to it alone, and deletes it at cleanup.
func ensureNode(t *testing.T, api *apitest.API, name string) {
	t.Helper()
	_, err := api.Admin.CoreV1().Nodes().Create(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create node %s: %v", name, err)
	}
	api.DeleteNodeAtCleanup(t, name)
}

func createPods(t *testing.T, api *apitest.API, ns, nodeName string, count int) []*v1.Pod {
	t.Helper()
	out := make([]*v1.Pod, count)
	errs := make([]error, count)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 20)
	for i := range count {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			grace := int64(30)
			p := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", i), Namespace: ns},
				Spec: v1.PodSpec{
					NodeName:                      nodeName,
					TerminationGracePeriodSeconds: &grace,
					Containers:                    []v1.Container{{Name: "c", Image: "localhost/podlife/pause:1.0"}},
				},
			}
			out[i], errs[i] = api.Admin.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("create pods: %v", err)
	}
	return out
}

func runningStatus(pod *v1.Pod, msg string) v1.PodStatus {
	started := metav1.NewTime(time.Now())
	return v1.PodStatus{
		Phase:     v1.PodRunning,
		Message:   msg,
		StartTime: &started,
		Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: started},
			{Type: v1.ContainersReady, Status: v1.ConditionTrue, LastTransitionTime: started},
		},
		ContainerStatuses: []v1.ContainerStatus{{
			Name: "c", Image: pod.Spec.Containers[0].Image, Ready: true, Started: new(bool),
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}},
		}},
	}
}

func succeededStatus(pod *v1.Pod) v1.PodStatus {
	now := metav1.NewTime(time.Now())
	return v1.PodStatus{
		Phase: v1.PodSucceeded,
		Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: now},
			{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: now},
		},
		ContainerStatuses: []v1.ContainerStatus{{
			Name: "c", Image: pod.Spec.Containers[0].Image,
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}},
		}},
	}
}

// requests returns how many requests of verb to resource the node's client
// made (every status code).
func (n *node) requests(t *testing.T, verb, resource string) float64 {
	t.Helper()
	mfs, err := n.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "podlife_api_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["verb"] == verb && l["resource"] == resource {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func (n *node) waitSeen(t *testing.T, api *apitest.API, pods ...*v1.Pod) {
	t.Helper()
	api.Eventually(t, 30*time.Second, "pods seen by the watch", func() (bool, error) {
		for _, p := range pods {
			if _, ok := n.pods.GetPodByUID(p.UID); !ok {
				return false, nil
			}
		}
		return true, nil
	})
}

func (n *node) settle(t *testing.T, api *apitest.API) {
	t.Helper()
	api.Eventually(t, 60*time.Second, "status writes settled", func() (bool, error) { return n.m.Pending() == 0, nil })
}

// TestAPIStatusesArriveOnePatchEach: statuses written by the manager with
// the node's credentials appear in the API, one PATCH each, no GET.
func TestAPIStatusesArriveOnePatchEach(t *testing.T) {
	api := apitest.New(t)
	const name = "status-t1"
	ensureNode(t, api, name)
	ns := api.Namespace(t)
	pod := createPods(t, api, ns, name, 1)[0]
	n := startNode(t, api, name, api.NodeConfig(t, name), nil)
	n.waitSeen(t, api, pod)
	ctx := context.Background()
	for i, msg := range []string{"one", "two", "three"} {
		_ = n.m.SetPodStatus(ctx, pod, nil, runningStatus(pod, msg))
		api.Eventually(t, 20*time.Second, "status "+msg+" in the API", func() (bool, error) {
			got, err := api.Admin.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			return err == nil && got.Status.Message == msg && got.Status.Phase == v1.PodRunning, err
		})
		n.settle(t, api)
		if got := n.requests(t, "patch", "pods/status"); got != float64(i+1) {
			t.Fatalf("after %d writes: %v PATCHes", i+1, got)
		}
	}
	if got := n.requests(t, "get", "pods"); got != 0 {
		t.Fatalf("%v GETs, want none", got)
	}
	got, _ := api.Admin.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if got.Status.QOSClass != v1.PodQOSBestEffort {
		t.Fatalf("qosClass = %q: the API server's field was lost", got.Status.QOSClass)
	}
	// Reconciles find nothing to do.
	waitReconciles(t, api, n.m, 2)
	if got := n.requests(t, "patch", "pods/status"); got != 3 {
		t.Fatalf("%v PATCHes after reconciles, want still 3", got)
	}
}

// TestAPIForceDeletedPodDropped: a pod force-deleted by an admin: the node
// is Forbidden to write it; the manager drops it and never retries.
func TestAPIForceDeletedPodDropped(t *testing.T) {
	api := apitest.New(t)
	const name = "status-t2"
	ensureNode(t, api, name)
	ns := api.Namespace(t)
	pod := createPods(t, api, ns, name, 1)[0]
	n := startNode(t, api, name, api.NodeConfig(t, name), nil)
	ctx := context.Background()
	_ = n.m.SetPodStatus(ctx, pod, nil, runningStatus(pod, "up"))
	n.settle(t, api)
	zero := int64(0)
	if err := api.Admin.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	api.Eventually(t, 20*time.Second, "pod gone", func() (bool, error) {
		_, err := api.Admin.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	_ = n.m.SetPodStatus(ctx, pod, nil, succeededStatus(pod))
	_ = n.m.PodFinished(ctx, deletingPod(pod), nil, succeededStatus(pod))
	api.Eventually(t, 20*time.Second, "pod dropped", func() (bool, error) { return n.m.IsGone(pod.UID), nil })
	before := n.requests(t, "patch", "pods/status") + n.requests(t, "delete", "pods") + n.requests(t, "get", "pods")
	waitReconciles(t, api, n.m, 3)
	after := n.requests(t, "patch", "pods/status") + n.requests(t, "delete", "pods") + n.requests(t, "get", "pods")
	if after != before {
		t.Fatalf("requests went on after the drop: %v then %v", before, after)
	}
	if got := n.requests(t, "patch", "pods/status"); got != 2 {
		t.Fatalf("%v PATCHes, want 2 (the first status, then one Forbidden)", got)
	}
}

func deletingPod(p *v1.Pod) *v1.Pod {
	p = p.DeepCopy()
	now := metav1.Now()
	p.DeletionTimestamp = &now
	return p
}

// TestAPIDownThenUp: statuses set while the API server cannot be reached
// arrive once it is back, only the newest; a pod being deleted that
// finished meanwhile is deleted then.
func TestAPIDownThenUp(t *testing.T) {
	api := apitest.New(t)
	const name = "status-t3"
	ensureNode(t, api, name)
	ns := api.Namespace(t)
	pods := createPods(t, api, ns, name, 2)
	live, doomed := pods[0], pods[1]
	nodeCfg := api.NodeConfig(t, name)
	proxy := apitest.NewProxy(t, nodeCfg)
	n := startNode(t, api, name, proxy.Config(nodeCfg), nil)
	n.waitSeen(t, api, live, doomed)
	ctx := context.Background()
	_ = n.m.SetPodStatus(ctx, live, nil, runningStatus(live, "before"))
	_ = n.m.SetPodStatus(ctx, doomed, nil, runningStatus(doomed, "before"))
	n.settle(t, api)
	// A graceful delete: the pod stays, Terminating, until the node deletes
	// it.
	if err := api.Admin.CoreV1().Pods(ns).Delete(ctx, doomed.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var terminating *v1.Pod
	api.Eventually(t, 20*time.Second, "deletion seen by the watch", func() (bool, error) {
		p, ok := n.pods.GetPodByUID(doomed.UID)
		terminating = p
		return ok && p.DeletionTimestamp != nil, nil
	})

	proxy.Down()
	for i := range 5 {
		_ = n.m.SetPodStatus(ctx, live, nil, runningStatus(live, fmt.Sprint("down-", i)))
	}
	_ = n.m.PodFinished(ctx, terminating, nil, succeededStatus(doomed))
	api.Eventually(t, 20*time.Second, "writes failing", func() (bool, error) {
		return n.requests(t, "patch", "pods/status") > 2 && n.m.Pending() == 2, nil
	})
	// A while down: more writes fail and back off.
	failed := n.requests(t, "patch", "pods/status")
	api.Eventually(t, 20*time.Second, "more failed writes", func() (bool, error) {
		return n.requests(t, "patch", "pods/status") >= failed+3, nil
	})
	if err := proxy.Up(); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	api.Eventually(t, 30*time.Second, "newest status and deletion after the API came back", func() (bool, error) {
		got, err := api.Admin.CoreV1().Pods(ns).Get(ctx, live.Name, metav1.GetOptions{})
		if err != nil || got.Status.Message != "down-4" {
			return false, err
		}
		_, err = api.Admin.CoreV1().Pods(ns).Get(ctx, doomed.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	t.Logf("API back: newest status written and finished pod deleted %v later", time.Since(up).Round(time.Millisecond))
	if got := n.requests(t, "delete", "pods"); got != 1 {
		t.Fatalf("%v DELETEs, want 1", got)
	}
}

// TestAPIManyPodsQuickly: 300 pods (PODLIFE_STATUS_PODS to change) bound
// to the node, a status each: the time until all are in the API with the
// node's credentials at QPS 50, burst 100 (apitest.LoadConfig's).
func TestAPIManyPodsQuickly(t *testing.T) {
	api := apitest.New(t)
	const name = "status-t1"
	count := 300
	if v := os.Getenv("PODLIFE_STATUS_PODS"); v != "" { // for docs/benchmarks.md: 1000, say
		c, err := strconv.Atoi(v)
		if err != nil || c < 1 {
			t.Fatalf("PODLIFE_STATUS_PODS=%q: want a positive number", v)
		}
		count = c
	}
	ensureNode(t, api, name)
	ns := api.Namespace(t)
	pods := createPods(t, api, ns, name, count)
	n := startNode(t, api, name, api.NodeConfig(t, name), nil)
	n.waitSeen(t, api, pods...)
	ctx := context.Background()
	start := time.Now()
	for _, p := range pods {
		_ = n.m.SetPodStatus(ctx, p, nil, runningStatus(p, "up"))
	}
	set := time.Since(start)
	n.settle(t, api)
	written := time.Since(start)
	list, err := api.Admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, p := range list.Items {
		if p.Status.Phase == v1.PodRunning && p.Status.Message == "up" {
			running++
		}
	}
	if running != count {
		t.Fatalf("%d of %d pods Running in the API", running, count)
	}
	patches := n.requests(t, "patch", "pods/status")
	t.Logf("%d pods: %d SetPodStatus calls took %v; all statuses in the API after %v (%.0f writes/s); %v PATCHes, %v GETs",
		count, count, set.Round(time.Microsecond), written.Round(time.Millisecond), float64(count)/written.Seconds(), patches, n.requests(t, "get", "pods"))
	if patches != float64(count) {
		t.Errorf("%v PATCHes for %d pods, want one each", patches, count)
	}
	if count <= 300 && written > 20*time.Second {
		t.Errorf("took %v, want well under 20 s", written)
	}
}

// TestAPINewUIDUnderTheName: a pod deleted and created again under its
// name: the old pod's status is refused by the UID precondition, and the
// manager drops the old pod without touching the new one.
func TestAPINewUIDUnderTheName(t *testing.T) {
	api := apitest.New(t)
	const name = "status-t2"
	ensureNode(t, api, name)
	ns := api.Namespace(t)
	old := createPods(t, api, ns, name, 1)[0]
	n := startNode(t, api, name, api.NodeConfig(t, name), func(o *status.Options, _ *podmanager.Manager) { o.Pods = nil })
	ctx := context.Background()
	zero := int64(0)
	if err := api.Admin.CoreV1().Pods(ns).Delete(ctx, old.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	var fresh *v1.Pod
	api.Eventually(t, 20*time.Second, "pod created again under its name", func() (bool, error) {
		p := old.DeepCopy()
		p.ObjectMeta = metav1.ObjectMeta{Name: old.Name, Namespace: ns}
		p.Status = v1.PodStatus{}
		var err error
		fresh, err = api.Admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		return err == nil, err
	})
	_ = n.m.SetPodStatus(ctx, old, nil, runningStatus(old, "old incarnation"))
	api.Eventually(t, 20*time.Second, "old pod dropped", func() (bool, error) { return n.m.IsGone(old.UID), nil })
	got, err := api.Admin.CoreV1().Pods(ns).Get(ctx, fresh.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.UID != fresh.UID || got.Status.Message != "" {
		t.Fatalf("the new pod was written: %+v", got.Status)
	}
	t.Logf("requests: %v PATCH, %v GET", n.requests(t, "patch", "pods/status"), n.requests(t, "get", "pods"))
}

// waitReconciles waits for k more full reconciles of m: every pod it knows
// was compared with the API server since the call.
func waitReconciles(t *testing.T, api *apitest.API, m *status.Manager, k uint64) {
	t.Helper()
	target := m.Reconciles() + k
	api.Eventually(t, 30*time.Second, fmt.Sprintf("%d reconciles", k), func() (bool, error) { return m.Reconciles() >= target, nil })
}
