package cluster_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/agent/fleet"
	"github.com/podlife/podlife/test/apitest"
)

// startFleet runs a fleet of n nodes named prefix0, prefix1, ..., labelled
// selectorLabel=value, through the admin's credentials (impersonating each
// node), until the test ends; it waits for every node to be Ready.
func startFleet(t *testing.T, api *apitest.API, prefix, value string, n int) *fleet.Fleet {
	t.Helper()
	return startFleetWith(t, api, api.AdminConfig, prefix, value, n)
}

// startFleetWith is startFleet through cfg (the admin's, through a proxy).
func startFleetWith(t *testing.T, api *apitest.API, cfg *rest.Config, prefix, value string, n int) *fleet.Fleet {
	t.Helper()
	f, err := fleet.New(fleet.Options{
		Config:     cfg,
		Nodes:      n,
		NamePrefix: prefix,
		Labels:     map[string]string{selectorLabel: value},
		Logger:     testr.NewWithOptions(t, testr.Options{Verbosity: 1}),
		Agent: func(_ string, o *agent.Options) {
			o.HousekeepingInterval = 500 * time.Millisecond
			o.RelistInterval = 200 * time.Millisecond
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range f.Names() {
		api.DeleteNode(name)
		api.DeleteNodeAtCleanup(t, name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("fleet Run: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Errorf("fleet Run did not return 60 s after its context ended")
		}
	})
	for _, name := range f.Names() {
		waitReady(t, api, name, 60*time.Second)
	}
	return f
}

// script returns a ScriptAnnotation value, failing the test when the
// fleet would not accept it.
func script(t *testing.T, s string) string {
	t.Helper()
	if _, err := fleet.ParseScript(s); err != nil {
		t.Fatalf("script %s: %v", s, err)
	}
	return s
}

// availability watches the pods of app=name and keeps the fewest of them
// that were Ready and not terminating at once, after each change.
type availability struct {
	mu      sync.Mutex
	pods    map[types.UID]bool // available, by UID
	fewest  int
	started bool
}

// watchAvailability starts watching; stop ends the watch.
func watchAvailability(t *testing.T, api *apitest.API, ns, name string) (a *availability, stop func()) {
	t.Helper()
	w, err := api.Admin.CoreV1().Pods(ns).Watch(context.Background(), metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatal(err)
	}
	a = &availability{pods: map[types.UID]bool{}, fewest: -1}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*v1.Pod)
			if !ok {
				continue
			}
			a.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(a.pods, p.UID)
			} else {
				a.pods[p.UID] = isRunningReady(p)
			}
			if a.started {
				n := 0
				for _, ok := range a.pods {
					if ok {
						n++
					}
				}
				if a.fewest < 0 || n < a.fewest {
					a.fewest = n
				}
			}
			a.mu.Unlock()
		}
	}()
	return a, func() { w.Stop(); <-done }
}

// start counts from now on (once the workload is all available).
func (a *availability) start() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.started = true
}

func (a *availability) min() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fewest
}

// A Deployment's rolling update on a fleet behaves as on real nodes: its
// pods' readiness comes from their probes (scripted: not ready for their
// first 3 s), so with maxUnavailable 0 and maxSurge 1 an old pod goes only
// once a new one is Ready: all 4 replicas stay available throughout, and
// every new pod was Ready no sooner than its script allows.
func TestFleetDeploymentRollingUpdate(t *testing.T) {
	t.Parallel()
	api := apitest.New(t)
	ns := api.Namespace(t)
	value := "fleet-roll-" + strings.ToLower(rand.String(5))
	startFleet(t, api, value+"-", value, 3)

	d := deployment("roll", value, 4)
	d.Spec.Template.Annotations = map[string]string{fleet.ScriptAnnotation: script(t,
		`{"containers": {"app": {"readiness": [{"after": "0s", "result": "failure"}, {"after": "3s", "result": "success"}]}}}`)}
	d.Spec.Template.Spec.Containers[0].ReadinessProbe = &v1.Probe{
		ProbeHandler:  v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}
	zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
	d.Spec.Strategy = appsv1.DeploymentStrategy{
		Type:          appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &zero, MaxSurge: &one},
	}
	ctx := context.Background()
	if _, err := api.Admin.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	avail, stop := watchAvailability(t, api, ns, "roll")
	defer stop()
	api.Eventually(t, 90*time.Second, "4 replicas Running and Ready", func() (bool, error) {
		_, total := runningByNode(t, api, ns, "roll")
		return total == 4, fmt.Errorf("%d ready", total)
	})
	avail.start()

	// The update: a new template, so a new ReplicaSet.
	cur, err := api.Admin.AppsV1().Deployments(ns).Get(ctx, "roll", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Template.Spec.Containers[0].Env = []v1.EnvVar{{Name: "VERSION", Value: "2"}}
	if _, err := api.Admin.AppsV1().Deployments(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	api.Eventually(t, 120*time.Second, "the rollout complete: 4 updated replicas available, no old pod left", func() (bool, error) {
		d, err := api.Admin.AppsV1().Deployments(ns).Get(ctx, "roll", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		all := pods(t, api, ns, "roll")
		done := d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == 4 &&
			d.Status.AvailableReplicas == 4 && d.Status.Replicas == 4 && len(all) == 4
		return done, fmt.Errorf("status %+v, %d pods", d.Status, len(all))
	})
	if m := avail.min(); m < 4 {
		t.Errorf("available replicas fell to %d during the rollout; maxUnavailable 0 allows none missing", m)
	}
	for _, p := range pods(t, api, ns, "roll") {
		if len(p.Spec.Containers[0].Env) == 0 {
			t.Errorf("pod %s is of the old template", p.Name)
		}
		var readyAt time.Time
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
				readyAt = c.LastTransitionTime.Time
			}
		}
		cs := p.Status.ContainerStatuses
		if len(cs) != 1 || cs[0].State.Running == nil {
			t.Fatalf("pod %s: container statuses %+v", p.Name, cs)
		}
		// Condition times are whole seconds: allow one.
		if started := cs[0].State.Running.StartedAt.Time; readyAt.Sub(started) < 2*time.Second {
			t.Errorf("pod %s Ready at %v, %v after its container started: the script says not before 3 s", p.Name, readyAt, readyAt.Sub(started))
		}
	}
}

// A Job whose pods fail twice and then succeed (scripted, counted across
// the Job's pods) completes as on real nodes: two failed pods counted
// against its backoffLimit, one succeeded, the Complete condition.
func TestFleetJobFailsTwiceThenSucceeds(t *testing.T) {
	t.Parallel()
	api := apitest.New(t)
	ns := api.Namespace(t)
	value := "fleet-job-" + strings.ToLower(rand.String(5))
	startFleet(t, api, value+"-", value, 2)

	backoff, grace := int32(3), int64(1)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "flaky"},
		Spec: batchv1.JobSpec{
			BackoffLimit: &backoff,
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{fleet.ScriptAnnotation: script(t,
					`{"runs": "controller", "containers": {"work": {"exitCodes": [1, 1, 0], "runFor": "1s"}}}`)}},
				Spec: v1.PodSpec{
					RestartPolicy:                 v1.RestartPolicyNever,
					NodeSelector:                  map[string]string{selectorLabel: value},
					TerminationGracePeriodSeconds: &grace,
					Containers:                    []v1.Container{{Name: "work", Image: testImage}},
				},
			},
		},
	}
	ctx := context.Background()
	if _, err := api.Admin.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The Job controller waits 10 s, then 20 s, before the second and
	// third pods.
	var got *batchv1.Job
	api.Eventually(t, 150*time.Second, "the Job Complete", func() (bool, error) {
		var err error
		if got, err = api.Admin.BatchV1().Jobs(ns).Get(ctx, "flaky", metav1.GetOptions{}); err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == v1.ConditionTrue {
				return true, nil
			}
			if c.Type == batchv1.JobFailed && c.Status == v1.ConditionTrue {
				t.Fatalf("the Job failed: %s: %s", c.Reason, c.Message)
			}
		}
		return false, fmt.Errorf("status: active %d, failed %d, succeeded %d", got.Status.Active, got.Status.Failed, got.Status.Succeeded)
	})
	if got.Status.Failed != 2 || got.Status.Succeeded != 1 {
		t.Errorf("Job status: failed %d, succeeded %d; want 2 and 1", got.Status.Failed, got.Status.Succeeded)
	}
	list, err := api.Admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=flaky"})
	if err != nil {
		t.Fatal(err)
	}
	codes := map[int32]int{}
	for _, p := range list.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if term := cs.State.Terminated; term != nil {
				codes[term.ExitCode]++
			}
		}
	}
	// The Job controller may have removed a finished pod's tracking
	// finalizer and the pod itself; what remains must agree.
	if codes[0] > 1 || codes[1] > 2 {
		t.Errorf("exit codes of the Job's pods: %v", codes)
	}
}

// kubectl drain of a fleet node evicts its pods through the eviction API
// and respects a PodDisruptionBudget: with minAvailable 3 of 4 replicas,
// whose replacements are Ready 2 s after they start, never fewer than 3
// are available, the drain ends, and the node is cordoned and empty.
func TestFleetDrainRespectsPodDisruptionBudget(t *testing.T) {
	t.Parallel()
	api := apitest.New(t)
	ns := api.Namespace(t)
	value := "fleet-drain-" + strings.ToLower(rand.String(5))
	f := startFleet(t, api, value+"-", value, 2)
	ctx := context.Background()

	d := deployment("drained", value, 4)
	d.Spec.Template.Annotations = map[string]string{fleet.ScriptAnnotation: script(t,
		`{"containers": {"app": {"readiness": [{"after": "0s", "result": "failure"}, {"after": "2s", "result": "success"}]}}}`)}
	d.Spec.Template.Spec.Containers[0].ReadinessProbe = &v1.Probe{
		ProbeHandler:  v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(80)}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}
	if _, err := api.Admin.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	three := intstr.FromInt32(3)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "drained"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &three,
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "drained"}},
		},
	}
	if _, err := api.Admin.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	avail, stop := watchAvailability(t, api, ns, "drained")
	defer stop()
	var by map[string]int
	api.Eventually(t, 90*time.Second, "4 replicas Running and Ready, the budget allowing 1 disruption", func() (bool, error) {
		var total int
		by, total = runningByNode(t, api, ns, "drained")
		b, err := api.Admin.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "drained", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return total == 4 && b.Status.DisruptionsAllowed == 1, fmt.Errorf("ready by node %v, budget %+v", by, b.Status)
	})
	avail.start()
	// Drain the node with the most pods (at least 2: 4 pods on 2 nodes).
	target := f.Names()[0]
	if by[f.Names()[1]] > by[target] {
		target = f.Names()[1]
	}
	if by[target] < 2 {
		t.Fatalf("pods by node %v: the drained node should hold 2 or more", by)
	}
	dctx, cancel := context.WithTimeout(ctx, 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(dctx, api.Kubectl(t), "--kubeconfig", filepath.Join(api.Dir, "admin.kubeconfig"),
		"drain", target, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=140s")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl drain %s: %v\n%s", target, err, out)
	}
	// kubectl retried the evictions the budget refused.
	if !strings.Contains(string(out), "evicting pod") || !strings.Contains(string(out), "drained") {
		t.Errorf("kubectl drain said:\n%s", out)
	}
	node, err := api.Admin.CoreV1().Nodes().Get(ctx, target, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !node.Spec.Unschedulable {
		t.Errorf("node %s not cordoned after the drain", target)
	}
	api.Eventually(t, 60*time.Second, "4 replicas Running and Ready, none on the drained node", func() (bool, error) {
		by, total := runningByNode(t, api, ns, "drained")
		return total == 4 && by[target] == 0 && len(pods(t, api, ns, "drained")) == 4, fmt.Errorf("ready by node %v", by)
	})
	if m := avail.min(); m < 3 {
		t.Errorf("available replicas fell to %d during the drain; the budget's minAvailable is 3", m)
	}
}

// A killed fleet node (the machine lost) goes NotReady when its Lease
// lapses, the control plane evicts its pods (tolerating unreachable for
// 5 s), and their replacements run on the other nodes; started again, the
// node comes back empty and finishes the evicted pods still bound to it.
func TestFleetKilledNodePodsMoveToOthers(t *testing.T) {
	t.Parallel()
	api := apitest.New(t)
	ns := api.Namespace(t)
	value := "fleet-kill-" + strings.ToLower(rand.String(5))
	f := startFleet(t, api, value+"-", value, 3)
	ctx := context.Background()

	d := deployment("moved", value, 6)
	five := int64(5)
	d.Spec.Template.Spec.Tolerations = []v1.Toleration{
		{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &five},
		{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &five},
	}
	if _, err := api.Admin.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var by map[string]int
	api.Eventually(t, 90*time.Second, "6 replicas Running", func() (bool, error) {
		var total int
		by, total = runningByNode(t, api, ns, "moved")
		return total == 6, fmt.Errorf("ready by node %v", by)
	})
	// The node with the most of them is lost (the scheduler's default
	// spreading is a preference: they may all be on one node).
	lost := f.Names()[0]
	for _, name := range f.Names() {
		if by[name] > by[lost] {
			lost = name
		}
	}
	var lostPods []string
	for _, p := range pods(t, api, ns, "moved") {
		if p.Spec.NodeName == lost {
			lostPods = append(lostPods, p.Name)
		}
	}
	if err := f.Node(lost).Kill(); err != nil {
		t.Fatal(err)
	}
	// The grace period (40 s), the taint, the tolerations (5 s).
	api.Eventually(t, 150*time.Second, "6 replicas Running and Ready on the other nodes", func() (bool, error) {
		by, total := runningByNode(t, api, ns, "moved")
		return total == 6 && by[lost] == 0, fmt.Errorf("ready by node %v", by)
	})
	// The evicted pods stay bound to the lost node, terminating, until it
	// returns: then it finishes them, and they go.
	if err := f.Node(lost).Start(); err != nil {
		t.Fatal(err)
	}
	api.Eventually(t, 90*time.Second, "the lost node's old pods gone", func() (bool, error) {
		var left []string
		for _, p := range pods(t, api, ns, "moved") {
			if p.Spec.NodeName == lost {
				left = append(left, fmt.Sprintf("%s (%s, deleting %v)", p.Name, p.Status.Phase, p.DeletionTimestamp != nil))
			}
		}
		return len(left) == 0, fmt.Errorf("on %s: %v (were %v)", lost, left, lostPods)
	})
	waitReady(t, api, lost, 60*time.Second)
}

// A fleet whose API server goes away for 20 s recovers without a restart:
// the pods scheduled onto its nodes meanwhile run once it is back, every
// node renews its Lease again and stays Ready.
func TestFleetRecoversAfterAPIOutage(t *testing.T) {
	t.Parallel()
	api := apitest.New(t)
	ns := api.Namespace(t)
	value := "fleet-outage-" + strings.ToLower(rand.String(5))
	proxy := apitest.NewProxy(t, api.AdminConfig)
	f := startFleetWith(t, api, proxy.Config(api.AdminConfig), value+"-", value, 3)
	ctx := context.Background()

	proxy.Down()
	down := time.Now()
	if _, err := api.Admin.AppsV1().Deployments(ns).Create(ctx, deployment("during", value, 6), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// 20 s: shorter than the node lifecycle controller's 40 s grace, so
	// the nodes stay Ready and the scheduler keeps binding to them.
	api.Eventually(t, 30*time.Second, "6 pods bound to the fleet while its API is away", func() (bool, error) {
		bound := 0
		for _, p := range pods(t, api, ns, "during") {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		return bound == 6 && time.Since(down) >= 20*time.Second, fmt.Errorf("%d bound", bound)
	})
	if err := proxy.Up(); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	api.Eventually(t, 90*time.Second, "the 6 pods Running and Ready", func() (bool, error) {
		_, total := runningByNode(t, api, ns, "during")
		return total == 6, fmt.Errorf("%d ready", total)
	})
	for _, name := range f.Names() {
		api.Eventually(t, 30*time.Second, "node "+name+" renewed its Lease after the outage", func() (bool, error) {
			renewed, err := leaseRenewTime(api, name)
			return err == nil && renewed.After(up.Add(-time.Second)), err
		})
		waitReady(t, api, name, 10*time.Second)
		if !f.Node(name).Running() {
			t.Errorf("node %s stopped", name)
		}
	}
}
