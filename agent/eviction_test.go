package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/agent/eviction"
	"github.com/podlife/podlife/podmanager/source"
	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime/fakecri"
)

// memoryNode is a node whose available memory the test sets.
type memoryNode struct{ avail atomic.Int64 }

func (n *memoryNode) NodeStats(context.Context) (*statsapi.NodeStats, error) {
	avail := uint64(n.avail.Load())
	ws := uint64(4<<30) - avail
	return &statsapi.NodeStats{Memory: &statsapi.MemoryStats{Time: metav1.Now(), AvailableBytes: &avail, WorkingSetBytes: &ws}}, nil
}

// Through the agent on fakecri: a pod whose emptyDir outgrows its
// sizeLimit is evicted (the usage measured on disk); under memory pressure
// the BestEffort pod is evicted and the Burstable one stays, a new
// BestEffort pod is refused; every final status keeps phase Failed and
// reason Evicted, with the kubelet's message, and the memory eviction its
// DisruptionTarget condition; each eviction is a Warning Evicted event.
func TestEviction(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	var channel *source.Channel
	events := &eventLog{}
	n := &memoryNode{}
	n.avail.Store(2 << 30)
	ra := startAgentWith(t, endpoint, t.TempDir(), func(o *agent.Options) {
		apiChannel(o, &channel)
		o.Recorder = events
		o.Eviction = &eviction.Options{NodeStats: n, MonitoringInterval: 100 * time.Millisecond}
	})
	limit := resource.MustParse("1Mi")
	pod := func(name string, edit func(*v1.Pod)) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid")},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: testImage}}}}
		if edit != nil {
			edit(p)
		}
		return p
	}
	withRequest := func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}
	}
	pods := []*v1.Pod{
		pod("scratchy", func(p *v1.Pod) {
			withRequest(p)
			p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
		}),
		pod("besteffort", nil),
		pod("burstable", withRequest),
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := channel.Push(ctx, pods); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		waitRunning(t, ra, p.UID)
	}
	final := func(uid types.UID) v1.PodStatus {
		t.Helper()
		var st v1.PodStatus
		podworkertest.WaitFor(t, waitTimeout, string(uid)+" finished", func() bool {
			var ok bool
			st, ok = ra.StatusReporter().Status(uid)
			return ok && ra.StatusReporter().Finished(uid)
		})
		return st
	}

	dir := filepath.Join(ra.rt.Runtime.VolumeRoot(), "scratchy-uid", "volumes", "kubernetes.io~empty-dir", "scratch")
	if err := os.WriteFile(filepath.Join(dir, "data"), make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	st := final("scratchy-uid")
	if st.Phase != v1.PodFailed || st.Reason != "Evicted" || st.Message != `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ` {
		t.Fatalf("scratchy: %s %q %q", st.Phase, st.Reason, st.Message)
	}

	n.avail.Store(50 << 20)
	st = final("besteffort-uid")
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container main was using 1Mi, request is 0, has larger consumption of memory. "
	if st.Phase != v1.PodFailed || st.Reason != "Evicted" || st.Message != want {
		t.Fatalf("besteffort: %s %q\n%q, want\n%q", st.Phase, st.Reason, st.Message, want)
	}
	i := slices.IndexFunc(st.Conditions, func(c v1.PodCondition) bool { return c.Type == v1.DisruptionTarget })
	if i < 0 || st.Conditions[i].Status != v1.ConditionTrue || st.Conditions[i].Reason != "TerminationByKubelet" || st.Conditions[i].LastTransitionTime.IsZero() {
		t.Fatalf("besteffort conditions %+v", st.Conditions)
	}
	n.avail.Store(2 << 30)

	// Still under MemoryPressure (the 5-minute transition period): a
	// BestEffort pod is refused.
	if err := channel.Push(ctx, append(pods, pod("late", nil))); err != nil {
		t.Fatal(err)
	}
	podworkertest.WaitFor(t, waitTimeout, "late rejected", func() bool {
		st, _ = ra.StatusReporter().Status("late-uid")
		return st.Phase == v1.PodFailed
	})
	if st.Phase != v1.PodFailed || st.Reason != "Evicted" || st.Message != "Pod was rejected: The node had condition: [MemoryPressure]. " {
		t.Fatalf("late: %s %q %q", st.Phase, st.Reason, st.Message)
	}
	if s, _ := ra.StatusReporter().Status("burstable-uid"); s.Phase != v1.PodRunning {
		t.Fatalf("burstable: %s %q", s.Phase, s.Message)
	}
	events.mu.Lock()
	var evicted int
	for _, e := range events.events {
		if strings.HasPrefix(e, "Warning Evicted ") {
			evicted++
		}
	}
	events.mu.Unlock()
	if evicted != 3 { // two evictions and the refusal
		t.Fatalf("%d Warning Evicted events, want 3: %v", evicted, events.events)
	}
}
