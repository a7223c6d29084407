package eviction

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"
)

const (
	mi = int64(1) << 20
	gi = int64(1) << 30
)

// fakeNode is a node whose figures the test sets; it serves node and pod
// stats and records evictions.
type fakeNode struct {
	clock *clocktesting.FakeClock

	mu                    sync.Mutex
	memCapacity, memAvail int64
	fsCapacity, fsAvail   int64
	inodes, inodesFree    int64
	imgCapacity, imgAvail int64
	maxPID, procs         int64
	nodeErr, podErr       error
	nodeStats             *statsapi.NodeStats // when set, served as is
	pods                  []*v1.Pod
	usage                 map[types.UID]*statsapi.PodStats
	evicted               []evictedPod
	freeOnEvict           bool // an eviction gives its pod's memory back
	staleTime             bool // stats keep the same time
	statsTime             time.Time
	podStatsCalls         int
}

type evictedPod struct {
	pod *v1.Pod
	e   Eviction
}

func newFakeNode() *fakeNode {
	return &fakeNode{
		clock:       clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		memCapacity: 4 * gi, memAvail: 2 * gi,
		fsCapacity: 100 * gi, fsAvail: 50 * gi,
		inodes: 1000000, inodesFree: 500000,
		imgCapacity: 100 * gi, imgAvail: 50 * gi,
		maxPID: 100000, procs: 100,
		usage:       map[types.UID]*statsapi.PodStats{},
		freeOnEvict: true,
	}
}

func u64(v int64) *uint64 { x := uint64(v); return &x }

func (n *fakeNode) now() metav1.Time {
	if n.staleTime {
		if n.statsTime.IsZero() {
			n.statsTime = n.clock.Now()
		}
		return metav1.NewTime(n.statsTime)
	}
	return metav1.NewTime(n.clock.Now())
}

func (n *fakeNode) NodeStats(ctx context.Context) (*statsapi.NodeStats, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.nodeErr != nil {
		return nil, n.nodeErr
	}
	if n.nodeStats != nil {
		return n.nodeStats, nil
	}
	t := n.now()
	ws := n.memCapacity - n.memAvail
	return &statsapi.NodeStats{
		Memory: &statsapi.MemoryStats{Time: t, AvailableBytes: u64(n.memAvail), WorkingSetBytes: u64(ws)},
		Fs: &statsapi.FsStats{Time: t, AvailableBytes: u64(n.fsAvail), CapacityBytes: u64(n.fsCapacity),
			InodesFree: u64(n.inodesFree), Inodes: u64(n.inodes)},
		Runtime: &statsapi.RuntimeStats{ImageFs: &statsapi.FsStats{Time: t, AvailableBytes: u64(n.imgAvail),
			CapacityBytes: u64(n.imgCapacity), InodesFree: u64(n.inodesFree), Inodes: u64(n.inodes)}},
		Rlimit: &statsapi.RlimitStats{Time: t, MaxPID: &n.maxPID, NumOfRunningProcesses: &n.procs},
	}, nil
}

func (n *fakeNode) ListPodStats(ctx context.Context) ([]statsapi.PodStats, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.podStatsCalls++
	if n.podErr != nil {
		return nil, n.podErr
	}
	out := make([]statsapi.PodStats, 0, len(n.usage))
	for _, p := range n.pods {
		if s, ok := n.usage[p.UID]; ok {
			out = append(out, *s)
		}
	}
	return out, nil
}

func (n *fakeNode) activePods() []*v1.Pod {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*v1.Pod(nil), n.pods...)
}

func (n *fakeNode) evict(ctx context.Context, pod *v1.Pod, e Eviction) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.evicted = append(n.evicted, evictedPod{pod, e})
	for i, p := range n.pods {
		if p.UID == pod.UID {
			n.pods = append(n.pods[:i:i], n.pods[i+1:]...)
			break
		}
	}
	if s := n.usage[pod.UID]; s != nil && n.freeOnEvict {
		if s.Memory != nil && s.Memory.WorkingSetBytes != nil {
			n.memAvail += int64(*s.Memory.WorkingSetBytes)
		}
		n.fsAvail += diskUsage(pod, s, fsRoot|fsLogs|fsLocalVolume, false)
	}
	delete(n.usage, pod.UID)
	return nil
}

func (n *fakeNode) evictedNames() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, e := range n.evicted {
		out = append(out, e.pod.Name)
	}
	return out
}

func (n *fakeNode) set(f func(n *fakeNode)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	f(n)
}

// addPod adds a pod with containers of the given requests and limits
// (memory, "" for none) and a memory working set.
func (n *fakeNode) addPod(name string, request, limit string, workingSet int64) *v1.Pod {
	c := v1.Container{Name: "c", Image: "img"}
	if request != "" {
		c.Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse(request)}
	}
	if limit != "" {
		c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse(limit)}
		if request == limit {
			c.Resources.Requests[v1.ResourceCPU] = resource.MustParse("100m")
			c.Resources.Limits[v1.ResourceCPU] = resource.MustParse("100m")
		}
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
			Annotations: map[string]string{"kubernetes.io/config.source": "api"}},
		Spec: v1.PodSpec{Containers: []v1.Container{c}},
	}
	n.mu.Lock()
	n.pods = append(n.pods, pod)
	n.usage[pod.UID] = &statsapi.PodStats{
		PodRef:     statsapi.PodReference{Name: name, Namespace: "ns", UID: string(pod.UID)},
		Memory:     &statsapi.MemoryStats{WorkingSetBytes: u64(workingSet)},
		Containers: []statsapi.ContainerStats{{Name: "c", Memory: &statsapi.MemoryStats{WorkingSetBytes: u64(workingSet)}}},
	}
	n.mu.Unlock()
	return pod
}

func (n *fakeNode) options(t *testing.T) Options {
	return Options{
		NodeStats:  n,
		PodStats:   n,
		ActivePods: n.activePods,
		Evict:      n.evict,
		Clock:      n.clock,
		Logger:     testr.New(t),
	}
}

func newManager(t *testing.T, o Options) *Manager {
	t.Helper()
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sync1(t *testing.T, m *Manager) []*v1.Pod {
	t.Helper()
	pods, err := m.Synchronize(context.Background())
	if err != nil {
		t.Fatalf("Synchronize: %v", err)
	}
	return pods
}

var errBoom = errors.New("boom")

type fakeGC struct {
	n             *fakeNode
	free          int64
	images, conts int
}

func (g *fakeGC) DeleteUnusedImages(ctx context.Context) (int64, error) {
	g.images++
	g.n.set(func(n *fakeNode) { n.fsAvail += g.free; n.imgAvail += g.free })
	return g.free, nil
}

func (g *fakeGC) DeleteAllUnusedContainers(ctx context.Context) error {
	g.conts++
	return nil
}
