package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/podlife/podlife/test/apitest"
)

// The agent registers its Node with capacity and nodeInfo, the node turns
// Ready within 30 s, and its Lease renews.
func TestNodeJoins(t *testing.T) {
	api := apitest.New(t)
	n := newNode(t, api, "e2e-1", nil)
	n.start(t, nil)
	node := waitReady(t, api, "e2e-1", 30*time.Second)
	if got := node.Status.Capacity.Pods().Value(); got != 110 {
		t.Errorf("capacity pods = %d, want 110", got)
	}
	if node.Status.Allocatable.Cpu().IsZero() || node.Status.Allocatable.Memory().IsZero() {
		t.Errorf("allocatable without cpu or memory: %v", node.Status.Allocatable)
	}
	info := node.Status.NodeInfo
	if info.KubeletVersion == "" || !strings.HasPrefix(info.ContainerRuntimeVersion, "fakecri://") || info.Architecture == "" || info.OperatingSystem != "linux" {
		t.Errorf("nodeInfo = %+v", info)
	}
	if node.Labels["kubernetes.io/hostname"] != "e2e-1" {
		t.Errorf("labels = %v", node.Labels)
	}
	var first time.Time
	api.Eventually(t, 10*time.Second, "lease exists", func() (bool, error) {
		var err error
		first, err = leaseRenewTime(api, "e2e-1")
		return err == nil, err
	})
	api.Eventually(t, 25*time.Second, "lease renewed", func() (bool, error) {
		now, err := leaseRenewTime(api, "e2e-1")
		return err == nil && now.After(first), err
	})
}

// A Deployment of 3 replicas is scheduled onto the agent's node by the real
// scheduler and runs; scaled down to 1, the other pods terminate and are
// deleted from the API. The node's events are in the API.
func TestDeploymentRunsAndScalesDown(t *testing.T) {
	api := apitest.New(t)
	ns := api.Namespace(t)
	value := "deploy-" + strings.ToLower(rand.String(5))
	n := newNode(t, api, "e2e-2", map[string]string{selectorLabel: value})
	n.start(t, nil)
	waitReady(t, api, "e2e-2", 30*time.Second)
	ctx := context.Background()
	d, err := api.Admin.AppsV1().Deployments(ns).Create(ctx, deployment("web", value, 3), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	api.Eventually(t, 60*time.Second, "3 replicas Running and Ready on e2e-2", func() (bool, error) {
		by, total := runningByNode(t, api, ns, "web")
		return total == 3 && by["e2e-2"] == 3, fmt.Errorf("running by node: %v", by)
	})
	// Events of the node about the pods, for kubectl describe pod.
	api.Eventually(t, 30*time.Second, "events from podlife on e2e-2", func() (bool, error) {
		list, err := api.Admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("source", "podlife").String(),
		})
		if err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "Pod" && e.Source.Host == "e2e-2" {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events from podlife, none about a pod from e2e-2", len(list.Items))
	})

	one := int32(1)
	d.Spec.Replicas = &one
	api.Eventually(t, 10*time.Second, "scale to 1", func() (bool, error) {
		cur, err := api.Admin.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cur.Spec.Replicas = &one
		_, err = api.Admin.AppsV1().Deployments(ns).Update(ctx, cur, metav1.UpdateOptions{})
		return err == nil, err
	})
	api.Eventually(t, 60*time.Second, "2 pods terminated and deleted from the API", func() (bool, error) {
		ps := pods(t, api, ns, "web")
		_, running := runningByNode(t, api, ns, "web")
		return len(ps) == 1 && running == 1, fmt.Errorf("%d pods in the API, %d running", len(ps), running)
	})
	api.Eventually(t, 30*time.Second, "the runtime runs 1 pod", func() (bool, error) {
		_, containers := n.srv.RunningCounts()
		return containers == 1, fmt.Errorf("%d running containers", containers)
	})
}

// A pod force-deleted while its container ignores SIGTERM finishes on the
// node: never left terminating or terminated in the agent, its container
// stopped, although the Node authorizer answers Forbidden for the gone pod.
func TestForceDeletedHangingPodFinishes(t *testing.T) {
	api := apitest.New(t)
	ns := api.Namespace(t)
	n := newNode(t, api, "e2e-3", nil)
	n.start(t, nil)
	waitReady(t, api, "e2e-3", 30*time.Second)
	p := createPod(t, api, ns, pod("hang", "e2e-3", 5, "hang"))
	waitPodRunning(t, api, ns, "hang", 30*time.Second)
	zero := int64(0)
	if err := api.Admin.CoreV1().Pods(ns).Delete(context.Background(), "hang", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	waitPodGone(t, api, ns, "hang", p.UID, 10*time.Second)
	api.Eventually(t, 60*time.Second, "the agent forgot the force-deleted pod", func() (bool, error) {
		for _, v := range n.a.Pods() {
			if v.UID == p.UID {
				return false, fmt.Errorf("still known: %+v", v)
			}
		}
		_, containers := n.srv.RunningCounts()
		return containers == 0, fmt.Errorf("%d containers still run", containers)
	})
}

// Stopped, an agent's Lease stops renewing; restarted, the agent adopts its
// Node (same object) and its pods (same containers, not restarted).
func TestRestartAdoptsNodeAndPods(t *testing.T) {
	api := apitest.New(t)
	ns := api.Namespace(t)
	n := newNode(t, api, "e2e-4", nil)
	n.start(t, nil)
	node := waitReady(t, api, "e2e-4", 30*time.Second)
	createPod(t, api, ns, pod("web", "e2e-4", 2))
	before := waitPodRunning(t, api, ns, "web", 30*time.Second)

	n.stop(t)
	stopped, err := leaseRenewTime(api, "e2e-4")
	if err != nil {
		t.Fatal(err)
	}
	// The lease is renewed every 10 s: after 15 s without a renewal, the
	// agent's renewals have stopped. (Waiting is the point: absence.)
	time.Sleep(15 * time.Second)
	if now, err := leaseRenewTime(api, "e2e-4"); err != nil || !now.Equal(stopped) {
		t.Fatalf("lease renewed after the agent stopped: %v -> %v (%v)", stopped, now, err)
	}

	n.start(t, nil)
	again := waitReady(t, api, "e2e-4", 30*time.Second)
	if again.UID != node.UID {
		t.Errorf("node recreated (UID %s -> %s), not adopted", node.UID, again.UID)
	}
	api.Eventually(t, 25*time.Second, "lease renewed again", func() (bool, error) {
		now, err := leaseRenewTime(api, "e2e-4")
		return err == nil && now.After(stopped), err
	})
	after := waitPodRunning(t, api, ns, "web", 30*time.Second)
	if b, a := before.Status.ContainerStatuses, after.Status.ContainerStatuses; len(b) != 1 || len(a) != 1 || b[0].ContainerID != a[0].ContainerID || a[0].RestartCount != 0 {
		t.Errorf("container changed across the restart: %+v -> %+v", b, a)
	}
}

// Three agents in one cluster: a Deployment of 30 replicas spreads over
// them and every pod runs; one agent stops for good and the control plane
// evicts its pods, whose replacements run on the other two.
func TestThreeNodesSpreadAndEvict(t *testing.T) {
	if testing.Short() {
		t.Skip("about two minutes: the node lifecycle controller's grace period and tolerations")
	}
	api := apitest.New(t)
	ns := api.Namespace(t)
	value := "spread-" + strings.ToLower(rand.String(5))
	names := []string{"e2e-1", "e2e-2", "e2e-3"}
	var nodes []*testNode
	for _, name := range names {
		n := newNode(t, api, name, map[string]string{selectorLabel: value})
		n.start(t, nil)
		nodes = append(nodes, n)
	}
	for _, name := range names {
		waitReady(t, api, name, 30*time.Second)
	}
	if _, err := api.Admin.AppsV1().Deployments(ns).Create(context.Background(), deployment("spread", value, 30), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	api.Eventually(t, 90*time.Second, "30 replicas Running over 3 nodes", func() (bool, error) {
		by, total := runningByNode(t, api, ns, "spread")
		return total == 30 && len(by) == 3, fmt.Errorf("running by node: %v", by)
	})

	nodes[2].stop(t) // for good
	api.Eventually(t, 180*time.Second, "30 replicas Running on the 2 remaining nodes", func() (bool, error) {
		by, total := runningByNode(t, api, ns, "spread")
		return by["e2e-1"]+by["e2e-2"] == 30, fmt.Errorf("running by node: %v (total %d)", by, total)
	})
}

// A pod deleted while the API server is down for the agent still finishes
// on the node, and its API object is deleted once the API server is back.
func TestDeletionFinishesWhileAPIDown(t *testing.T) {
	api := apitest.New(t)
	ns := api.Namespace(t)
	n := newNode(t, api, "e2e-5", nil)
	proxy := apitest.NewProxy(t, api.NodeConfig(t, "e2e-5"))
	n.start(t, proxy.Config(api.NodeConfig(t, "e2e-5")))
	waitReady(t, api, "e2e-5", 30*time.Second)
	// The container ignores SIGTERM: the kill takes the whole grace period,
	// long enough to take the API server away meanwhile.
	p := createPod(t, api, ns, pod("slow", "e2e-5", 5, "hang"))
	waitPodRunning(t, api, ns, "slow", 30*time.Second)
	if err := api.Admin.CoreV1().Pods(ns).Delete(context.Background(), "slow", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	api.Eventually(t, 30*time.Second, "the agent saw the deletion", func() (bool, error) {
		return n.a.Workers().IsPodTerminationRequested(p.UID), nil
	})
	proxy.Down()
	api.Eventually(t, 60*time.Second, "the pod finished on the node while the API is down", func() (bool, error) {
		_, containers := n.srv.RunningCounts()
		return containers == 0 && n.a.Workers().ShouldPodBeFinished(p.UID), fmt.Errorf("%d containers run", containers)
	})
	if got, err := api.Admin.CoreV1().Pods(ns).Get(context.Background(), "slow", metav1.GetOptions{}); err != nil || got.UID != p.UID {
		t.Fatalf("the pod left the API while the agent could not reach it: %v", err)
	}
	if err := proxy.Up(); err != nil {
		t.Fatal(err)
	}
	waitPodGone(t, api, ns, "slow", p.UID, 60*time.Second)
}

// A status set while the API server is down reaches it once it is back: a
// container that fails while the agent cannot write shows in the API
// afterwards.
func TestStatusArrivesAfterAPIReturns(t *testing.T) {
	api := apitest.New(t)
	ns := api.Namespace(t)
	n := newNode(t, api, "e2e-5", nil)
	proxy := apitest.NewProxy(t, api.NodeConfig(t, "e2e-5"))
	n.start(t, proxy.Config(api.NodeConfig(t, "e2e-5")))
	waitReady(t, api, "e2e-5", 30*time.Second)
	job := pod("job", "e2e-5", 2)
	job.Spec.RestartPolicy = v1.RestartPolicyNever
	p := createPod(t, api, ns, job)
	running := waitPodRunning(t, api, ns, "job", 30*time.Second)
	id := running.Status.ContainerStatuses[0].ContainerID
	proxy.Down()
	if err := n.srv.ExitContainer(id[strings.Index(id, "://")+3:], 3); err != nil {
		t.Fatal(err)
	}
	api.Eventually(t, 30*time.Second, "the agent saw the failure", func() (bool, error) {
		st, ok := n.a.StatusReporter().Status(p.UID)
		return ok && st.Phase == v1.PodFailed, nil
	})
	if err := proxy.Up(); err != nil {
		t.Fatal(err)
	}
	api.Eventually(t, 60*time.Second, "Failed with exit code 3 in the API", func() (bool, error) {
		got, err := api.Admin.CoreV1().Pods(ns).Get(context.Background(), "job", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cs := got.Status.ContainerStatuses
		return got.Status.Phase == v1.PodFailed && len(cs) == 1 && cs[0].State.Terminated != nil && cs[0].State.Terminated.ExitCode == 3,
			fmt.Errorf("phase %s, containers %+v", got.Status.Phase, cs)
	})
}
