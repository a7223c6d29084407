package node_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/agent/node"
	"github.com/podlife/podlife/runtime"
)

// fakeRuntime answers Status and Version; ready can be flipped.
type fakeRuntime struct {
	notReady atomic.Bool
	fail     atomic.Bool // Status fails (a runtime that does not answer)
	calls    atomic.Int32
}

func (r *fakeRuntime) Status(context.Context) (*runtime.Status, error) {
	r.calls.Add(1)
	if r.fail.Load() {
		return nil, errors.New("rpc error: code = DeadlineExceeded")
	}
	return &runtime.Status{Conditions: []runtime.Condition{
		{Type: runtime.ConditionRuntimeReady, Status: !r.notReady.Load(), Reason: "Test", Message: "flipped by the test"},
		{Type: runtime.ConditionNetworkReady, Status: false, Reason: "NoCNI"},
	}}, nil
}

func (r *fakeRuntime) Version(context.Context) (*runtime.VersionInfo, error) {
	return &runtime.VersionInfo{RuntimeName: "fakert", RuntimeVersion: "1.2.3", APIVersion: "v1"}, nil
}

type harness struct {
	t      *testing.T
	client *fake.Clientset
	clock  *clocktesting.FakeClock
	rt     *fakeRuntime
	c      *node.Controller
	cancel context.CancelFunc
	done   chan error
}

func newHarness(t *testing.T, edit func(*node.Options), objects ...k8sruntime.Object) *harness {
	t.Helper()
	h := &harness{t: t, client: fake.NewClientset(objects...), clock: clocktesting.NewFakeClock(time.Unix(1_000_000, 0)), rt: &fakeRuntime{}}
	opts := node.Options{Client: h.client, NodeName: "n1", Runtime: h.rt, Clock: h.clock, Rand: func() float64 { return 0 }}
	if edit != nil {
		edit(&opts)
	}
	// The fake API server assigns no UIDs; the real one does.
	h.client.PrependReactor("create", "nodes", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		if n, ok := a.(k8stesting.CreateAction).GetObject().(*v1.Node); ok && n.UID == "" {
			n.UID = "uid-" + types.UID(n.Name)
		}
		return false, nil, nil
	})
	var err error
	if h.c, err = node.New(opts); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- h.c.Run(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		select {
		case err := <-h.done:
			if err != nil {
				h.t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			h.t.Error("Run did not return")
		}
	})
}

// eventually waits (real time, bounded) for cond, stepping the fake clock
// by step whenever some goroutine waits on it.
func (h *harness) eventually(what string, step time.Duration, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		if step > 0 && h.clock.HasWaiters() {
			h.clock.Step(step)
		}
		time.Sleep(time.Millisecond)
	}
}

func (h *harness) waitRegistered() {
	h.t.Helper()
	select {
	case <-h.c.Registered():
	case <-time.After(10 * time.Second):
		h.t.Fatal("not registered")
	}
}

// node reads the Node through the fake's tracker, which records no action.
func (h *harness) node() *v1.Node {
	h.t.Helper()
	o, err := h.client.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, "", "n1")
	if err != nil {
		return &v1.Node{}
	}
	return o.(*v1.Node)
}

// lease reads the Lease through the tracker; nil when there is none.
func (h *harness) lease() *coordinationv1.Lease {
	o, err := h.client.Tracker().Get(schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}, v1.NamespaceNodeLease, "n1")
	if err != nil {
		return nil
	}
	return o.(*coordinationv1.Lease)
}

func cond(n *v1.Node, t v1.NodeConditionType) v1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.NodeCondition{}
}

// count counts the client's actions of verb on resource (and subresource).
func (h *harness) count(verb, res, sub string) int {
	n := 0
	for _, a := range h.client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == res && a.GetSubresource() == sub {
			n++
		}
	}
	return n
}

func TestRegisterCreatesNodeWithStatusAndLease(t *testing.T) {
	h := newHarness(t, func(o *node.Options) {
		o.Labels = map[string]string{"example.com/pool": "edge"}
		o.Taints = []v1.Taint{{Key: "example.com/edge", Effect: v1.TaintEffectNoSchedule}}
		o.Capacity = v1.ResourceList{v1.ResourceCPU: resource.MustParse("3")}
		o.Allocatable = v1.ResourceList{v1.ResourcePods: resource.MustParse("50")}
	})
	h.start()
	h.waitRegistered()
	h.eventually("Ready written", 0, func() bool { return cond(h.node(), v1.NodeReady).Status == v1.ConditionTrue })
	n := h.node()
	if n.Labels[v1.LabelHostname] != "n1" || n.Labels[v1.LabelOSStable] != "linux" || n.Labels[v1.LabelArchStable] == "" || n.Labels["example.com/pool"] != "edge" {
		t.Errorf("labels = %v", n.Labels)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "example.com/edge" {
		t.Errorf("taints = %v", n.Spec.Taints)
	}
	st := n.Status
	if st.Capacity.Pods().Value() != 110 || st.Capacity.Cpu().Value() != 3 || st.Capacity.Memory().IsZero() {
		t.Errorf("capacity = %v", st.Capacity)
	}
	if st.Allocatable.Pods().Value() != 50 || st.Allocatable.Cpu().Value() != 3 {
		t.Errorf("allocatable = %v", st.Allocatable)
	}
	if st.NodeInfo.ContainerRuntimeVersion != "fakert://1.2.3" || st.NodeInfo.KubeletVersion != node.Version() || st.NodeInfo.OperatingSystem != "linux" {
		t.Errorf("nodeInfo = %+v", st.NodeInfo)
	}
	if st.DaemonEndpoints.KubeletEndpoint.Port != 10250 || len(st.Addresses) == 0 || st.Addresses[0].Type != v1.NodeInternalIP {
		t.Errorf("endpoints %v, addresses %v", st.DaemonEndpoints, st.Addresses)
	}
	for _, c := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		if cond(n, c).Status != v1.ConditionFalse {
			t.Errorf("%s = %v", c, cond(n, c))
		}
	}
	if got := h.c.NodeIPs(); len(got) == 0 || got[0] != st.Addresses[0].Address {
		t.Errorf("NodeIPs = %v", got)
	}
	h.eventually("lease created", 0, func() bool {
		l := h.lease()
		return l != nil && *l.Spec.LeaseDurationSeconds == 40 && *l.Spec.HolderIdentity == "n1" &&
			len(l.OwnerReferences) == 1 && l.OwnerReferences[0].Kind == "Node" && l.OwnerReferences[0].UID == n.UID
	})
}

func TestAdoptKeepsWhatOthersSet(t *testing.T) {
	existing := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-1", Labels: map[string]string{"team": "a", v1.LabelHostname: "old"},
			Annotations: map[string]string{"note": "keep"}},
		Spec: v1.NodeSpec{PodCIDR: "10.1.0.0/24", Taints: []v1.Taint{{Key: "other", Effect: v1.TaintEffectNoExecute}}},
	}
	h := newHarness(t, func(o *node.Options) { o.Labels = map[string]string{"pool": "edge"} }, existing)
	h.start()
	h.waitRegistered()
	h.eventually("status written", 0, func() bool { return cond(h.node(), v1.NodeReady).Status == v1.ConditionTrue })
	n := h.node()
	if n.UID != "uid-1" || n.Labels["team"] != "a" || n.Labels["pool"] != "edge" || n.Labels[v1.LabelHostname] != "n1" ||
		n.Annotations["note"] != "keep" || n.Spec.PodCIDR != "10.1.0.0/24" || len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "other" {
		t.Errorf("adopted node = %+v", n)
	}
}

func TestRegisterRetriesUntilTheAPIAccepts(t *testing.T) {
	h := newHarness(t, nil)
	var fails atomic.Int32
	fails.Store(3)
	h.client.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		if fails.Add(-1) >= 0 {
			return true, nil, apierrors.NewServiceUnavailable("down")
		}
		return false, nil, nil
	})
	h.start()
	h.eventually("registered after 3 failures", time.Second, func() bool {
		select {
		case <-h.c.Registered():
			return true
		default:
			return false
		}
	})
	if got := h.count("create", "nodes", ""); got != 4 {
		t.Errorf("%d creates, want 4", got)
	}
}

func TestLeaseRenewsEveryIntervalAndBacksOff(t *testing.T) {
	h := newHarness(t, nil)
	// Reactors cannot be added while the client is in use: this one is
	// armed later.
	var fail atomic.Int32
	h.client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		if fail.Add(-1) >= 0 {
			return true, nil, apierrors.NewInternalError(errors.New("boom"))
		}
		return false, nil, nil
	})
	h.start()
	h.waitRegistered()
	renew := func() time.Time {
		if l := h.lease(); l != nil {
			return l.Spec.RenewTime.Time
		}
		return time.Time{}
	}
	h.eventually("lease created", 0, func() bool { return !renew().IsZero() })
	first := renew()
	// Renewed on the 10 s ticks of the fake clock. The harness may step it
	// again before the lease goroutine ran, so the renewal is at some
	// multiple of 10 s, not necessarily the first.
	h.eventually("lease renewed", 10*time.Second, func() bool { return renew().After(first) })
	if d := renew().Sub(first); d%(10*time.Second) != 0 {
		t.Errorf("lease renewed %v after its creation, want a multiple of the 10 s interval", d)
	}
	// Renewals are one Update each, from the last returned Lease.
	if gets := h.count("get", "leases", ""); gets != 1 {
		t.Errorf("%d lease GETs, want 1 (only before the first create)", gets)
	}

	fail.Store(2)
	before := renew()
	// Two failures, retried after 200ms and 400ms, then renewed: well
	// within one 10 s interval after the failing renewal.
	start := h.clock.Now()
	h.eventually("renewed after errors", 100*time.Millisecond, func() bool { return renew().After(before) })
	if took := renew().Sub(start); took > 10*time.Second+time.Second {
		t.Errorf("renewed %s after the failures began, want the back-off (≈10.6 s)", took)
	}
}

func TestReadyFollowsTheRuntime(t *testing.T) {
	h := newHarness(t, nil)
	h.start()
	h.waitRegistered()
	h.eventually("Ready", 0, func() bool { return cond(h.node(), v1.NodeReady).Status == v1.ConditionTrue })
	readySince := cond(h.node(), v1.NodeReady).LastTransitionTime
	memSince := cond(h.node(), v1.NodeMemoryPressure).LastTransitionTime

	h.rt.notReady.Store(true)
	h.eventually("NotReady", 10*time.Second, func() bool { return cond(h.node(), v1.NodeReady).Status == v1.ConditionFalse })
	r := cond(h.node(), v1.NodeReady)
	if r.Reason != "KubeletNotReady" || r.LastTransitionTime.Equal(&readySince) {
		t.Errorf("NotReady condition = %+v", r)
	}
	if m := cond(h.node(), v1.NodeMemoryPressure); !m.LastTransitionTime.Equal(&memSince) {
		t.Errorf("MemoryPressure moved its transition time %v -> %v without a change", memSince, m.LastTransitionTime)
	}
	h.rt.notReady.Store(false)
	h.eventually("Ready again", 10*time.Second, func() bool { return cond(h.node(), v1.NodeReady).Status == v1.ConditionTrue })
}

// A runtime whose Status calls fail leaves the Node as its last answer
// made it for 30 s (the kubelet's baseRuntimeSyncThreshold), then makes it
// not ready: "container runtime is down". One slow answer on a busy
// machine does not make the Node not ready.
func TestReadyOutlastsRuntimeStatusFailuresFor30s(t *testing.T) {
	h := newHarness(t, nil)
	h.start()
	h.waitRegistered()
	ready := func() v1.NodeCondition { return cond(h.node(), v1.NodeReady) }
	// Each status computed now, at the fake clock's time (the harness's
	// ticks may compute more in between: same time, same answer).
	sync := func(what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.c.SyncStatus(ctx); err != nil {
			t.Fatalf("%s: SyncStatus: %v", what, err)
		}
	}
	sync("the runtime answers")
	if c := ready(); c.Status != v1.ConditionTrue {
		t.Fatalf("Ready = %+v", c)
	}
	h.rt.fail.Store(true) // the last ready answer was at the clock's time now
	calls := h.rt.calls.Load()
	sync("the first failure")
	h.clock.Step(29 * time.Second)
	sync("failures for 29 s")
	if h.rt.calls.Load() < calls+2 {
		t.Fatalf("%d status checks after the failures began, want 2 at least", h.rt.calls.Load()-calls)
	}
	if c := ready(); c.Status != v1.ConditionTrue {
		t.Fatalf("after 29 s of failed status checks: %+v, want still Ready", c)
	}
	h.clock.Step(time.Second)
	sync("failures for 30 s")
	if c := ready(); c.Status != v1.ConditionFalse || c.Message != "container runtime is down" {
		t.Fatalf("after 30 s of failed status checks: %+v, want not ready, the runtime down", c)
	}
	h.rt.fail.Store(false)
	sync("the runtime answers again")
	if c := ready(); c.Status != v1.ConditionTrue {
		t.Fatalf("the runtime answering again: %+v, want Ready", c)
	}
}

func TestStatusWrittenOnChangeAndEveryFiveMinutes(t *testing.T) {
	h := newHarness(t, nil)
	h.start()
	h.waitRegistered()
	h.eventually("first status", 0, func() bool { return h.count("patch", "nodes", "status") == 1 })
	// Nine quiet minutes of 10 s ticks: one write at 5 minutes.
	start := h.clock.Now()
	h.eventually("nine minutes", 10*time.Second, func() bool { return h.clock.Since(start) >= 9*time.Minute })
	h.eventually("the 5-minute report", 0, func() bool { return h.count("patch", "nodes", "status") == 2 })
	if got := h.count("patch", "nodes", "status"); got != 2 {
		t.Errorf("%d status writes in nine unchanged minutes after the first, want 1", got-1)
	}
}

func TestProviderConfiguresTheNode(t *testing.T) {
	h := newHarness(t, func(o *node.Options) {
		o.Runtime = nil
		o.Provider = node.ProviderFunc(func(_ context.Context, st *v1.NodeStatus) error {
			st.Capacity[v1.ResourceName("example.com/vm")] = resource.MustParse("4")
			st.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "192.0.2.7"}}
			for i := range st.Conditions {
				if st.Conditions[i].Type == v1.NodeMemoryPressure {
					st.Conditions[i].Status, st.Conditions[i].Reason = v1.ConditionTrue, "VMsFull"
				}
			}
			return nil
		})
	})
	h.start()
	h.waitRegistered()
	h.eventually("status", 0, func() bool { return cond(h.node(), v1.NodeReady).Status == v1.ConditionTrue })
	n := h.node()
	if q := n.Status.Capacity[v1.ResourceName("example.com/vm")]; q.Value() != 4 {
		t.Errorf("capacity = %v", n.Status.Capacity)
	}
	if m := cond(n, v1.NodeMemoryPressure); m.Status != v1.ConditionTrue || m.Reason != "VMsFull" {
		t.Errorf("MemoryPressure = %+v", m)
	}
	if ips := h.c.NodeIPs(); len(ips) != 1 || ips[0] != "192.0.2.7" {
		t.Errorf("NodeIPs = %v", ips)
	}
}

func TestNodeDeletedIsRegisteredAgain(t *testing.T) {
	h := newHarness(t, nil)
	h.start()
	h.waitRegistered()
	h.eventually("status", 0, func() bool { return h.count("patch", "nodes", "status") == 1 })
	// The controller learns of the deletion from its watch of the Node. The
	// fake clientset's tracker has no resource versions: a delete between
	// the watch's list and its watch call is lost (a real API server
	// replays it), and the first status write can come before the watch
	// starts. So delete once the watch call was made.
	h.eventually("the Node's watch", 0, func() bool { return h.count("watch", "nodes", "") >= 1 })
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	if err := h.client.Tracker().Delete(gvr, "", "n1"); err != nil {
		t.Fatal(err)
	}
	h.eventually("created again", 10*time.Second, func() bool { return h.count("create", "nodes", "") == 2 })
}

func TestOptionsValidation(t *testing.T) {
	c := fake.NewClientset()
	for name, o := range map[string]node.Options{
		"no client":          {NodeName: "n"},
		"no name":            {Client: c},
		"bad name":           {Client: c, NodeName: "N_1"},
		"restricted label":   {Client: c, NodeName: "n", Labels: map[string]string{"node-role.kubernetes.io/worker": ""}},
		"node-restriction":   {Client: c, NodeName: "n", Labels: map[string]string{"node-restriction.kubernetes.io/x": "y"}},
		"bad label value":    {Client: c, NodeName: "n", Labels: map[string]string{"a": "not valid!"}},
		"bad taint effect":   {Client: c, NodeName: "n", Taints: []v1.Taint{{Key: "k", Effect: "Sometimes"}}},
		"renew >= duration":  {Client: c, NodeName: "n", LeaseDuration: 10 * time.Second, LeaseRenewInterval: 10 * time.Second},
		"negative frequency": {Client: c, NodeName: "n", StatusUpdateFrequency: -1},
	} {
		if _, err := node.New(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for _, l := range []string{"kubernetes.io/hostname", "node.kubernetes.io/pool", "topology.kubernetes.io/zone", "example.com/x", "plain"} {
		if _, err := node.New(node.Options{Client: c, NodeName: "n", Labels: map[string]string{l: "v"}}); err != nil {
			t.Errorf("label %s refused: %v", l, err)
		}
	}
}

// The status loop reads the Node from its watch: once the watch has listed
// it, ten status periods make no GET of the Node.
func TestStatusReadsTheNodeFromItsWatch(t *testing.T) {
	h := newHarness(t, nil)
	h.start()
	h.waitRegistered()
	h.eventually("the Node listed and watched", 0, func() bool {
		return h.count("watch", "nodes", "") >= 1
	})
	h.eventually("first status", 10*time.Second, func() bool { return h.count("patch", "nodes", "status") == 1 })
	// The watch request is made once the list has returned, but the
	// informer has synced only once it has processed what it listed (on
	// a loaded machine, after further status periods): until then an
	// update GETs the Node. A forced update that makes no GET shows the
	// informer synced.
	h.eventually("a status update that reads the Node from the watch", 0, func() bool {
		before := h.count("get", "nodes", "")
		if err := h.c.SyncStatus(h.t.Context()); err != nil {
			h.t.Fatal(err)
		}
		return h.count("get", "nodes", "") == before
	})
	gets := h.count("get", "nodes", "")
	start := h.clock.Now()
	h.eventually("ten status periods", 10*time.Second, func() bool { return h.clock.Since(start) >= 100*time.Second })
	if got := h.count("get", "nodes", ""); got != gets {
		t.Errorf("%d GETs of the Node in ten status periods, want none (read from the watch)", got-gets)
	}
	// A change the watch delivers is seen: a controller's Unknown is
	// repaired without a read.
	n := h.node()
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == v1.NodeReady {
			n.Status.Conditions[i].Status = v1.ConditionUnknown
		}
	}
	if err := h.client.Tracker().Update(schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, n, ""); err != nil {
		t.Fatal(err)
	}
	h.eventually("Ready repaired", 10*time.Second, func() bool { return cond(h.node(), v1.NodeReady).Status == v1.ConditionTrue })
	if got := h.count("get", "nodes", ""); got != gets {
		t.Errorf("%d GETs of the Node to repair it, want none", got-gets)
	}
}

// Allocatable is the computed figures before registration, the status
// written (with the Provider's changes) after it.
func TestAllocatable(t *testing.T) {
	h := newHarness(t, func(o *node.Options) {
		o.Capacity = v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi")}
		o.Allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse("3")}
		o.Provider = node.ProviderFunc(func(_ context.Context, st *v1.NodeStatus) error {
			st.Allocatable[v1.ResourceMemory] = resource.MustParse("6Gi")
			return nil
		})
	})
	before := h.c.Allocatable()
	if q := before[v1.ResourceCPU]; q.Cmp(resource.MustParse("3")) != 0 {
		t.Errorf("before registration: cpu %v", before)
	}
	if q := before[v1.ResourceMemory]; q.Cmp(resource.MustParse("8Gi")) != 0 {
		t.Errorf("before registration: memory %v", before)
	}
	h.start()
	h.waitRegistered()
	h.eventually("the Provider's allocatable", 0, func() bool {
		q := h.c.Allocatable()[v1.ResourceMemory]
		return q.Cmp(resource.MustParse("6Gi")) == 0
	})
}

// Options.Images fills status.images; a change of the image list is a
// change of the status, written at the next update.
func TestImagesListedInTheStatus(t *testing.T) {
	var mu sync.Mutex
	images := []v1.ContainerImage{{Names: []string{"docker.io/library/big@sha256:1", "docker.io/library/big:1"}, SizeBytes: 900}}
	h := newHarness(t, func(o *node.Options) {
		o.Images = func() []v1.ContainerImage {
			mu.Lock()
			defer mu.Unlock()
			return images
		}
	})
	h.start()
	h.waitRegistered()
	h.eventually("images in the status", 0, func() bool { return len(h.node().Status.Images) == 1 })
	if got := h.node().Status.Images[0]; got.SizeBytes != 900 || len(got.Names) != 2 {
		t.Errorf("status.images[0] = %+v", got)
	}
	mu.Lock()
	images = append([]v1.ContainerImage{{Names: []string{"huge:1"}, SizeBytes: 5000}}, images...)
	mu.Unlock()
	h.eventually("the new image list", 10*time.Second, func() bool {
		im := h.node().Status.Images
		return len(im) == 2 && im[0].SizeBytes == 5000
	})
}

type fakePressure struct{ mem, disk, pid atomic.Bool }

func (p *fakePressure) IsUnderMemoryPressure() bool { return p.mem.Load() }
func (p *fakePressure) IsUnderDiskPressure() bool   { return p.disk.Load() }
func (p *fakePressure) IsUnderPIDPressure() bool    { return p.pid.Load() }

func TestPressureConditionsFollowTheirSource(t *testing.T) {
	p := &fakePressure{}
	h := newHarness(t, func(o *node.Options) { o.Pressure = p })
	h.start()
	h.waitRegistered()
	for _, c := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		if got := cond(h.node(), c); got.Status != v1.ConditionFalse {
			t.Fatalf("%s = %+v at registration", c, got)
		}
	}
	p.mem.Store(true)
	p.disk.Store(true)
	h.eventually("pressure", 10*time.Second, func() bool {
		return cond(h.node(), v1.NodeMemoryPressure).Status == v1.ConditionTrue && cond(h.node(), v1.NodeDiskPressure).Status == v1.ConditionTrue
	})
	for _, want := range []v1.NodeCondition{
		{Type: v1.NodeMemoryPressure, Reason: "KubeletHasInsufficientMemory", Message: "podlife has insufficient memory available"},
		{Type: v1.NodeDiskPressure, Reason: "KubeletHasDiskPressure", Message: "podlife has disk pressure"},
		{Type: v1.NodePIDPressure, Reason: "KubeletHasSufficientPID", Message: "podlife has sufficient PID available"},
	} {
		if got := cond(h.node(), want.Type); got.Reason != want.Reason || got.Message != want.Message {
			t.Errorf("%s = %q %q, want %q %q", want.Type, got.Reason, got.Message, want.Reason, want.Message)
		}
	}
	p.mem.Store(false)
	h.eventually("no memory pressure", 10*time.Second, func() bool {
		c := cond(h.node(), v1.NodeMemoryPressure)
		return c.Status == v1.ConditionFalse && c.Reason == "KubeletHasSufficientMemory"
	})
}

// SyncStatus writes a changed status at once, without waiting for the next
// StatusUpdateFrequency tick (the fake clock is never stepped here).
func TestSyncStatusWritesAtOnce(t *testing.T) {
	var down atomic.Bool
	h := newHarness(t, func(o *node.Options) {
		o.Provider = node.ProviderFunc(func(_ context.Context, st *v1.NodeStatus) error {
			if down.Load() {
				for i := range st.Conditions {
					if st.Conditions[i].Type == v1.NodeReady {
						st.Conditions[i].Status, st.Conditions[i].Reason, st.Conditions[i].Message = v1.ConditionFalse, "KubeletNotReady", "node is shutting down"
					}
				}
			}
			return nil
		})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := h.c.SyncStatus(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("SyncStatus before Run: %v, want the context's error", err)
	}
	h.start()
	h.waitRegistered()
	down.Store(true)
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.c.SyncStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if r := cond(h.node(), v1.NodeReady); r.Status != v1.ConditionFalse || r.Message != "node is shutting down" {
		t.Errorf("Ready = %+v", r)
	}
}
