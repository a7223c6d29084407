package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/agent/eviction"
	"github.com/podlife/podlife/agent/node"
	"github.com/podlife/podlife/test/apitest"
)

// suppliedSignals is a node whose memory and disk the test sets: the
// memory available is what the capacity leaves after the other
// processes' use and each running pod's working set (the test's figure
// for it, by pod name).
type suppliedSignals struct {
	inner     eviction.PodStatsProvider
	namespace string // the test's: only its pods use memory

	mu                  sync.Mutex
	memCapacity, other  int64
	workingSet          map[string]int64
	fsCapacity, fsAvail int64
	imageGCFrees        int64
	imageGCs            int
}

// listPodStats gives the runtime's pods (those with a ready sandbox) with
// the test's working sets, and their sum.
func (s *suppliedSignals) listPodStats(ctx context.Context) ([]statsapi.PodStats, int64, error) {
	list, err := s.inner.ListPodStats(ctx)
	if err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var sum int64
	for i := range list {
		if list[i].PodRef.Namespace != s.namespace {
			// A previous run's pod on the same node, still being
			// deleted: not this test's.
			continue
		}
		ws := uint64(s.workingSet[list[i].PodRef.Name])
		sum += int64(ws)
		list[i].Memory = &statsapi.MemoryStats{Time: metav1.Now(), WorkingSetBytes: &ws}
		for j := range list[i].Containers {
			list[i].Containers[j].Memory = &statsapi.MemoryStats{Time: metav1.Now(), WorkingSetBytes: &ws}
		}
	}
	return list, sum, nil
}

func (s *suppliedSignals) ListPodStats(ctx context.Context) ([]statsapi.PodStats, error) {
	list, _, err := s.listPodStats(ctx)
	return list, err
}

// NodeStats counts the running pods' working sets itself (with inner): the
// eviction manager reads the pods' stats only when a threshold is met.
func (s *suppliedSignals) NodeStats(ctx context.Context) (*statsapi.NodeStats, error) {
	var running int64
	if s.inner != nil {
		var err error
		if _, running, err = s.listPodStats(ctx); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := metav1.Now()
	avail := uint64(max(s.memCapacity-s.other-running, 0))
	ws := uint64(s.memCapacity) - avail
	fsAvail, fsCap := uint64(s.fsAvail), uint64(s.fsCapacity)
	fs := &statsapi.FsStats{Time: now, AvailableBytes: &fsAvail, CapacityBytes: &fsCap}
	return &statsapi.NodeStats{
		Memory:  &statsapi.MemoryStats{Time: now, AvailableBytes: &avail, WorkingSetBytes: &ws},
		Fs:      fs,
		Runtime: &statsapi.RuntimeStats{ImageFs: fs},
	}, nil
}

func (s *suppliedSignals) DeleteUnusedImages(ctx context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.imageGCs++
	s.fsAvail += s.imageGCFrees
	return s.imageGCFrees, nil
}

func (s *suppliedSignals) set(f func(s *suppliedSignals)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

const mib = int64(1) << 20

// startEvicting runs an agent for node n with an eviction manager on the
// given signals (nil: this machine's, through the agent's defaults).
func startEvicting(t *testing.T, n *testNode, o *eviction.Options) *agent.Agent {
	t.Helper()
	client, err := kubernetes.NewForConfig(n.api.NodeConfig(t, n.name))
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Options{
		Runtime:  n.rt,
		NodeName: n.name,
		Cluster: &agent.Cluster{
			Client: client,
			Node:   node.Options{StatusUpdateFrequency: 500 * time.Millisecond},
		},
		Eviction:             o,
		Logger:               testr.NewWithOptions(t, testr.Options{Verbosity: 2}).WithName(n.name),
		HousekeepingInterval: 500 * time.Millisecond,
		RelistInterval:       200 * time.Millisecond,
		BackOffPeriod:        500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Errorf("Run did not return")
		}
	})
	return a
}

func memPod(name, nodeName, request string, guaranteed bool) *v1.Pod {
	p := pod(name, nodeName, 30)
	c := &p.Spec.Containers[0]
	if request != "" {
		c.Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse(request)}
	}
	if guaranteed {
		c.Resources.Requests[v1.ResourceCPU] = resource.MustParse("100m")
		c.Resources.Limits = c.Resources.Requests.DeepCopy()
	}
	return p
}

func getPod(t *testing.T, api *apitest.API, ns, name string) *v1.Pod {
	t.Helper()
	p, err := api.Admin.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitEvicted waits for the pod to be Failed with reason Evicted and a
// DisruptionTarget condition in the API, and returns it.
func waitEvicted(t *testing.T, api *apitest.API, ns, name string) *v1.Pod {
	t.Helper()
	var p *v1.Pod
	api.Eventually(t, 60*time.Second, "pod "+name+" evicted", func() (bool, error) {
		var err error
		p, err = api.Admin.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "Evicted", fmt.Errorf("phase %s reason %q", p.Status.Phase, p.Status.Reason)
	})
	return p
}

func nodeCondition(t *testing.T, api *apitest.API, name string, ct v1.NodeConditionType) v1.NodeCondition {
	t.Helper()
	n, err := api.Admin.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == ct {
			return c
		}
	}
	return v1.NodeCondition{}
}

func waitNodeCondition(t *testing.T, api *apitest.API, name string, ct v1.NodeConditionType, status v1.ConditionStatus) v1.NodeCondition {
	t.Helper()
	var c v1.NodeCondition
	api.Eventually(t, 60*time.Second, fmt.Sprintf("node %s %s %s", name, ct, status), func() (bool, error) {
		c = nodeCondition(t, api, name, ct)
		return c.Status == status, fmt.Errorf("%s is %s", ct, c.Status)
	})
	return c
}

// Under a supplied memory signal the BestEffort pod is evicted first,
// then the Burstable one above its request; the Guaranteed pod and the
// Burstable one within its request stay. Evicted pods are Failed with
// reason Evicted in the API, the Node's MemoryPressure is True then False,
// and a BestEffort pod is refused meanwhile. Disk pressure is relieved by
// image garbage collection without evicting anything.
func TestEvictionUnderSuppliedMemoryAndDiskPressure(t *testing.T) {
	api := apitest.New(t)
	ns := api.Namespace(t)
	n := newNode(t, api, "evict-1", nil)
	sig := &suppliedSignals{inner: n.rt, namespace: ns, memCapacity: 2048 * mib, fsCapacity: 100 << 30, fsAvail: 50 << 30,
		workingSet: map[string]int64{"besteffort": 400 * mib, "burstable-above": 300 * mib, "burstable-within": 100 * mib, "guaranteed": 900 * mib}}
	a := startEvicting(t, n, &eviction.Options{
		NodeStats: sig, PodStats: sig, ImageGC: sig,
		MonitoringInterval: 200 * time.Millisecond, PressureTransitionPeriod: 5 * time.Second,
	})
	waitReady(t, api, n.name, 60*time.Second)
	if c := nodeCondition(t, api, n.name, v1.NodeMemoryPressure); c.Status != v1.ConditionFalse || c.Reason != "KubeletHasSufficientMemory" {
		t.Fatalf("MemoryPressure at start: %+v", c)
	}
	for _, p := range []*v1.Pod{
		memPod("guaranteed", n.name, "1Gi", true),
		memPod("burstable-within", n.name, "500Mi", false),
		memPod("burstable-above", n.name, "100Mi", false),
		memPod("besteffort", n.name, "", false),
	} {
		createPod(t, api, ns, p)
	}
	for _, name := range []string{"guaranteed", "burstable-within", "burstable-above", "besteffort"} {
		waitPodRunning(t, api, ns, name, 60*time.Second)
	}

	// 2048 - 300 - 1700 = 48Mi available, below 100Mi: one eviction (the
	// BestEffort pod, 400Mi) brings it to 448Mi.
	sig.set(func(s *suppliedSignals) { s.other = 300 * mib })
	be := waitEvicted(t, api, ns, "besteffort")
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 48Mi. Container app was using 400Mi, request is 0, has larger consumption of memory. "
	if be.Status.Message != want {
		t.Errorf("message\n%q, want\n%q", be.Status.Message, want)
	}
	var dt *v1.PodCondition
	for i := range be.Status.Conditions {
		if be.Status.Conditions[i].Type == v1.DisruptionTarget {
			dt = &be.Status.Conditions[i]
		}
	}
	if dt == nil || dt.Status != v1.ConditionTrue || dt.Reason != "TerminationByKubelet" || dt.Message != want {
		t.Errorf("DisruptionTarget condition %+v", dt)
	}
	c := waitNodeCondition(t, api, n.name, v1.NodeMemoryPressure, v1.ConditionTrue)
	if c.Reason != "KubeletHasInsufficientMemory" {
		t.Errorf("MemoryPressure %+v", c)
	}
	// Refused under memory pressure: a BestEffort pod; admitted: one with a request.
	createPod(t, api, ns, memPod("late-besteffort", n.name, "", false))
	api.Eventually(t, 30*time.Second, "late-besteffort rejected", func() (bool, error) {
		p := getPod(t, api, ns, "late-besteffort")
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "Evicted" &&
			p.Status.Message == "Pod was rejected: The node had condition: [MemoryPressure]. ", fmt.Errorf("status %s %q %q", p.Status.Phase, p.Status.Reason, p.Status.Message)
	})
	for _, name := range []string{"guaranteed", "burstable-within", "burstable-above"} {
		if p := getPod(t, api, ns, name); !isRunningReady(p) {
			t.Fatalf("%s not running after the first eviction: %s %s", name, p.Status.Phase, p.Status.Reason)
		}
	}

	// 2048 - 700 - 1300 = 48Mi: the Burstable pod above its request goes
	// (to 348Mi), the Guaranteed pod (its 900Mi within its 1Gi) stays.
	sig.set(func(s *suppliedSignals) { s.other = 700 * mib })
	waitEvicted(t, api, ns, "burstable-above")
	sig.set(func(s *suppliedSignals) { s.other = 0 })
	waitNodeCondition(t, api, n.name, v1.NodeMemoryPressure, v1.ConditionFalse)
	for _, name := range []string{"guaranteed", "burstable-within"} {
		if p := getPod(t, api, ns, name); !isRunningReady(p) {
			t.Fatalf("%s evicted or stopped: %s %s %q", name, p.Status.Phase, p.Status.Reason, p.Status.Message)
		}
	}

	// Disk: 5% available, below nodefs.available<10%; image GC frees 40%.
	sig.set(func(s *suppliedSignals) { s.fsAvail = 5 << 30; s.imageGCFrees = 40 << 30 })
	c = waitNodeCondition(t, api, n.name, v1.NodeDiskPressure, v1.ConditionTrue)
	if c.Reason != "KubeletHasDiskPressure" {
		t.Errorf("DiskPressure %+v", c)
	}
	waitNodeCondition(t, api, n.name, v1.NodeDiskPressure, v1.ConditionFalse)
	for _, name := range []string{"guaranteed", "burstable-within"} {
		if p := getPod(t, api, ns, name); !isRunningReady(p) {
			t.Fatalf("%s evicted for disk pressure that image GC relieved: %s %q", name, p.Status.Phase, p.Status.Message)
		}
	}
	sig.mu.Lock()
	gcs := sig.imageGCs
	sig.mu.Unlock()
	if gcs == 0 {
		t.Fatal("disk pressure relieved without image GC?")
	}
	_ = a
}

// An emptyDir over its sizeLimit evicts its pod (the usage measured on the
// node's disk, as the kubelet's du).
func TestEmptyDirOverSizeLimitEvictsItsPod(t *testing.T) {
	api := apitest.New(t)
	ns := api.Namespace(t)
	n := newNode(t, api, "evict-2", nil)
	sig := &suppliedSignals{memCapacity: 2048 * mib, fsCapacity: 100 << 30, fsAvail: 50 << 30}
	startEvicting(t, n, &eviction.Options{NodeStats: sig, MonitoringInterval: 200 * time.Millisecond})
	waitReady(t, api, n.name, 60*time.Second)
	limit := resource.MustParse("1Mi")
	p := pod("scratchy", n.name, 30)
	p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	p = createPod(t, api, ns, p)
	calm := pod("calm", n.name, 30)
	calm.Spec.Volumes = p.Spec.Volumes
	calm.Spec.Containers[0].VolumeMounts = p.Spec.Containers[0].VolumeMounts
	createPod(t, api, ns, calm)
	waitPodRunning(t, api, ns, "scratchy", 60*time.Second)
	waitPodRunning(t, api, ns, "calm", 60*time.Second)

	dir := filepath.Join(n.rt.VolumeRoot(), string(p.UID), "volumes", "kubernetes.io~empty-dir", "scratch")
	if err := os.WriteFile(filepath.Join(dir, "data"), []byte(strings.Repeat("x", 2<<20)), 0o644); err != nil {
		t.Fatalf("write into the emptyDir: %v", err)
	}
	got := waitEvicted(t, api, ns, "scratchy")
	if want := `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `; got.Status.Message != want {
		t.Errorf("message %q, want %q", got.Status.Message, want)
	}
	if c := getPod(t, api, ns, "calm"); !isRunningReady(c) {
		t.Errorf("calm pod stopped: %s %q", c.Status.Phase, c.Status.Message)
	}
}
