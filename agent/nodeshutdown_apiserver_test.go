package agent_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/agent/shutdown"
	"github.com/podlife/podlife/runtime/fakecri"
	"github.com/podlife/podlife/test/apitest"
)

// A node shutdown with three priorities, through a real API server: the
// pods stop in order of priority, lowest first, each within its group's
// grace period; their statuses in the API say Failed, Terminated, with a
// DisruptionTarget condition; the Node is not ready ("node is shutting
// down"); a pod bound afterwards is rejected (NodeShutdown).
func TestNodeShutdownAPIServer(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{Images: []string{testImage}})
	runNodeShutdown(t, endpoint)
}

// The same on containerd: real containers, really ignoring SIGTERM.
func TestNodeShutdownAPIServerContainerd(t *testing.T) {
	endpoint := os.Getenv(endpointEnv)
	if endpoint == "" {
		t.Skip(endpointEnv + " is not set: skipping the node shutdown on a real CRI runtime")
	}
	runNodeShutdown(t, endpoint)
}

// runNodeShutdown is the node shutdown through a real API server, on the
// runtime at endpoint.
func runNodeShutdown(t *testing.T, endpoint string) {
	api := apitest.New(t)
	const nodeName = "shut-1"
	api.DeleteNode(nodeName)
	api.DeleteNodeAtCleanup(t, nodeName)
	ns := api.Namespace(t)
	ctx := context.Background()

	// A PriorityClass for the middle group (the Priority admission plugin
	// refuses a spec.priority without one); the critical pod uses the
	// built-in system-cluster-critical (2,000,000,000).
	mid := "shut-mid-" + rand.String(5)
	if _, err := api.Admin.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: mid}, Value: 1000}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = api.Admin.SchedulingV1().PriorityClasses().Delete(context.Background(), mid, metav1.DeleteOptions{})
	})

	// Each group may take 4 s; the pods ignore SIGTERM ("hang") and ask
	// for 2 s, so each group takes about 2 s and the groups' finish times
	// are apart.
	groups := []shutdown.PriorityGracePeriod{
		{Priority: 0, ShutdownGracePeriodSeconds: 4},
		{Priority: 1000, ShutdownGracePeriodSeconds: 4},
		{Priority: shutdown.SystemCriticalPriority, ShutdownGracePeriodSeconds: 4},
	}
	ra := startAgentWith(t, endpoint, t.TempDir(), func(o *agent.Options) {
		o.NodeName = nodeName
		o.ManifestPath = ""
		o.Cluster = &agent.Cluster{Client: api.NodeClient(t, nodeName)}
		o.ShutdownGracePeriodByPodPriority = groups
	})
	api.Eventually(t, 30*time.Second, "node registered", func() (bool, error) {
		_, err := api.Admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		return err == nil, nil
	})

	newPod := func(name, class string) *v1.Pod {
		grace := int64(2)
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1.PodSpec{NodeName: nodeName, PriorityClassName: class, TerminationGracePeriodSeconds: &grace,
				Containers: []v1.Container{{Name: "main", Image: testImage, Args: []string{"hang"}}}}}
	}
	names := []string{"low", "mid", "critical"}
	for i, class := range []string{"", mid, "system-cluster-critical"} {
		if _, err := api.Admin.CoreV1().Pods(ns).Create(ctx, newPod(names[i], class), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(name string) (*v1.Pod, error) {
		return api.Admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	}
	for _, name := range names {
		api.Eventually(t, 60*time.Second, name+" Running", func() (bool, error) {
			p, err := get(name)
			return err == nil && p.Status.Phase == v1.PodRunning, err
		})
	}

	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := ra.ShutdownNode(sctx)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("ShutdownNode: %v", err)
	}
	t.Logf("shutdown took %s: %+v", took, res)
	if budget := 12 * time.Second; took > budget {
		t.Errorf("shutdown took %s, longer than its budget %s", took, budget)
	}
	if res.Pods != 3 || res.Stopped != 3 || res.Failed != 0 {
		t.Errorf("result %+v, want 3 pods stopped", res)
	}

	// The statuses are in the API server when ShutdownNode returns.
	finished := map[string]time.Time{}
	for _, name := range names {
		p, err := get(name)
		if err != nil {
			t.Fatal(err)
		}
		st := p.Status
		if st.Phase != v1.PodFailed || st.Reason != "Terminated" || st.Message != "Pod was terminated in response to imminent node shutdown." {
			t.Errorf("%s: phase %s reason %q message %q, want Failed, Terminated", name, st.Phase, st.Reason, st.Message)
		}
		var dt *v1.PodCondition
		for i := range st.Conditions {
			if st.Conditions[i].Type == v1.DisruptionTarget {
				dt = &st.Conditions[i]
			}
		}
		if dt == nil || dt.Status != v1.ConditionTrue || dt.Reason != "TerminationByKubelet" {
			t.Errorf("%s: DisruptionTarget %+v, want True, TerminationByKubelet", name, dt)
		}
		if len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Terminated == nil {
			t.Fatalf("%s: container statuses %+v, want one terminated", name, st.ContainerStatuses)
		}
		finished[name] = st.ContainerStatuses[0].State.Terminated.FinishedAt.Time
	}
	// Lowest priority first: each group took about 2 s (the pods' own
	// grace period), so the finish times (to the second) are apart.
	if !finished["low"].Before(finished["mid"]) || !finished["mid"].Before(finished["critical"]) {
		t.Errorf("finish times low %s, mid %s, critical %s: want them in that order",
			finished["low"].Format(time.TimeOnly), finished["mid"].Format(time.TimeOnly), finished["critical"].Format(time.TimeOnly))
	}

	// The Node is not ready once ShutdownNode returns.
	n, err := api.Admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ready v1.NodeCondition
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			ready = c
		}
	}
	if ready.Status != v1.ConditionFalse || ready.Reason != "KubeletNotReady" || ready.Message != "node is shutting down" {
		t.Errorf("Ready condition %+v, want False, KubeletNotReady, node is shutting down", ready)
	}

	// A pod bound to the node now is rejected.
	if _, err := api.Admin.CoreV1().Pods(ns).Create(ctx, newPod("late", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	api.Eventually(t, 30*time.Second, "late pod rejected", func() (bool, error) {
		p, err := get("late")
		if err != nil {
			return false, err
		}
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "NodeShutdown" &&
			p.Status.Message == "Pod was rejected: Pod was rejected as the node is shutting down.", nil
	})

	// The agent ends; a second call returns the first one's result.
	again, err := ra.ShutdownNode(sctx)
	if err != nil || again.Pods != 3 {
		t.Errorf("second ShutdownNode: %+v, %v", again, err)
	}
	ra.stop(t)
	for _, name := range append(names, "late") {
		if err := api.Admin.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}
}

// Without a grace period configured, ShutdownNode is refused.
func TestShutdownNodeNotConfigured(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	ra := startAgent(t, endpoint, t.TempDir())
	if _, err := ra.ShutdownNode(context.Background()); !errors.Is(err, agent.ErrNoGracefulShutdown) {
		t.Errorf("ShutdownNode: %v, want ErrNoGracefulShutdown", err)
	}
	if ra.NodeShutdown() != nil {
		t.Error("a node shutdown without configuration")
	}
}
