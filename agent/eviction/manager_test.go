package eviction

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func conds(m *Manager) string {
	var s []string
	for _, c := range m.Conditions() {
		s = append(s, string(c))
	}
	return strings.Join(s, ",")
}

// Under memory pressure the BestEffort pod goes first, then the Burstable
// one above its request; once the pressure is gone the Guaranteed and the
// Burstable one within its request stay, and MemoryPressure clears after
// the transition period.
func TestMemoryPressureRanksAndClears(t *testing.T) {
	n := newFakeNode()
	n.addPod("guaranteed", "1Gi", "1Gi", 900*mi)
	n.addPod("burstable-within", "500Mi", "", 100*mi)
	n.addPod("burstable-above", "100Mi", "", 300*mi)
	n.addPod("besteffort", "", "", 400*mi)
	m := newManager(t, n.options(t))

	if got := sync1(t, m); len(got) != 0 || conds(m) != "" {
		t.Fatalf("no pressure: evicted %v, conditions %q", got, conds(m))
	}
	n.set(func(n *fakeNode) { n.memAvail = 50 * mi }) // < 100Mi
	n.clock.Step(10 * time.Second)
	sync1(t, m)
	if conds(m) != "MemoryPressure" {
		t.Fatalf("conditions %q, want MemoryPressure", conds(m))
	}
	// 450Mi available now: resolved. Low again, for the second eviction.
	n.set(func(n *fakeNode) { n.memAvail = 60 * mi })
	n.clock.Step(10 * time.Second)
	sync1(t, m)
	n.clock.Step(10 * time.Second)
	sync1(t, m) // resolved: 360Mi available
	if diff := cmp.Diff([]string{"besteffort", "burstable-above"}, n.evictedNames()); diff != "" {
		t.Fatalf("evicted (-want +got):\n%s", diff)
	}
	e := n.evicted[0].e
	if e.GracePeriodSeconds != ImmediateGracePeriodSeconds || e.Condition == nil ||
		e.Condition.Type != v1.DisruptionTarget || e.Condition.Reason != v1.PodReasonTerminationByKubelet {
		t.Fatalf("eviction %+v", e)
	}
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container c was using 400Mi, request is 0, has larger consumption of memory. "
	if e.Message != want {
		t.Fatalf("message\n%q, want\n%q", e.Message, want)
	}
	if !m.IsUnderMemoryPressure() {
		t.Fatal("MemoryPressure cleared before the transition period")
	}
	n.clock.Step(DefaultPressureTransitionPeriod - 20*time.Second) // 4m50s after the last sighting
	sync1(t, m)
	if !m.IsUnderMemoryPressure() {
		t.Fatal("MemoryPressure cleared before the transition period ended")
	}
	n.clock.Step(10 * time.Second)
	sync1(t, m)
	if m.IsUnderMemoryPressure() {
		t.Fatal("MemoryPressure still on after the transition period")
	}
	if diff := cmp.Diff([]string{"besteffort", "burstable-above"}, n.evictedNames()); diff != "" {
		t.Fatalf("Guaranteed or within-request pods evicted (-want +got):\n%s", diff)
	}
}

func TestSoftThresholdWaitsForGracePeriod(t *testing.T) {
	n := newFakeNode()
	n.addPod("a", "", "", 100*mi)
	th, err := ParseThresholds(nil, map[string]string{"memory.available": "1Gi"}, map[string]string{"memory.available": "1m30s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := n.options(t)
	o.Thresholds = th
	o.MaxPodGracePeriodSeconds = 30
	m := newManager(t, o)
	n.set(func(n *fakeNode) { n.memAvail = 500 * mi })
	for range 9 {
		sync1(t, m)
		n.clock.Step(10 * time.Second)
	}
	if len(n.evicted) != 0 {
		t.Fatalf("evicted within the grace period: %v", n.evictedNames())
	}
	if conds(m) != "MemoryPressure" {
		t.Fatalf("conditions %q: a soft threshold sets the condition at once", conds(m))
	}
	sync1(t, m) // 90s
	if got := n.evictedNames(); len(got) != 1 || n.evicted[0].e.GracePeriodSeconds != 30 {
		t.Fatalf("evicted %v, want a with grace 30", n.evicted)
	}
}

func TestDiskPressureReclaimsBeforeEvicting(t *testing.T) {
	n := newFakeNode()
	p := n.addPod("a", "", "", 10*mi)
	n.usage[p.UID].Containers[0].Rootfs = &statsapi.FsStats{UsedBytes: u64(5 * gi)}
	n.usage[p.UID].Containers[0].Logs = &statsapi.FsStats{UsedBytes: u64(1 * gi)}
	gc := &fakeGC{n: n, free: 20 * gi}
	o := n.options(t)
	o.ImageGC, o.ContainerGC = gc, gc
	m := newManager(t, o)
	n.set(func(n *fakeNode) { n.fsAvail, n.imgAvail = 5*gi, 5*gi }) // < 10% and < 15%
	sync1(t, m)
	if gc.conts != 1 || gc.images != 1 || len(n.evicted) != 0 {
		t.Fatalf("gc %+v, evicted %v: want one reclaim and no eviction", gc, n.evictedNames())
	}
	if conds(m) != "DiskPressure" {
		t.Fatalf("conditions %q", conds(m))
	}
	// The collectors free nothing more: the pod goes.
	gc.free = 0
	n.set(func(n *fakeNode) { n.fsAvail, n.imgAvail = 5*gi, 5*gi })
	n.clock.Step(10 * time.Second)
	sync1(t, m)
	if got := n.evictedNames(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("evicted %v", got)
	}
	// 10% of 100Gi, computed in float32 as the kubelet does.
	want := "The node was low on resource: ephemeral-storage. Threshold quantity: 10737418400, available: 5Gi. Container c was using 6Gi, request is 0, has larger consumption of ephemeral-storage. "
	if got := n.evicted[0].e.Message; got != want {
		t.Fatalf("message\n%q, want\n%q", got, want)
	}
}

func TestEmptyDirOverSizeLimitEvicts(t *testing.T) {
	n := newFakeNode()
	p := n.addPod("a", "", "", 10*mi)
	limit := resource.MustParse("1Mi")
	p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
	q := n.addPod("b", "", "", 10*mi)
	q.Spec.Volumes = p.Spec.Volumes
	n.usage[p.UID].VolumeStats = []statsapi.VolumeStats{{Name: "scratch", FsStats: statsapi.FsStats{UsedBytes: u64(2 * mi)}}}
	n.usage[q.UID].VolumeStats = []statsapi.VolumeStats{{Name: "scratch", FsStats: statsapi.FsStats{UsedBytes: u64(1 * mi)}}}
	m := newManager(t, n.options(t))
	sync1(t, m)
	if got := n.evictedNames(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("evicted %v, want a (b is at its limit, not over)", got)
	}
	e := n.evicted[0].e
	if e.Message != `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ` || e.GracePeriodSeconds != 1 || e.Condition != nil {
		t.Fatalf("eviction %+v", e)
	}
	if conds(m) != "" {
		t.Fatalf("conditions %q", conds(m))
	}
}

func TestEphemeralStorageLimits(t *testing.T) {
	n := newFakeNode()
	c := n.addPod("container", "", "", 10*mi)
	c.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}
	n.usage[c.UID].Containers[0].Logs = &statsapi.FsStats{UsedBytes: u64(600 * mi)}
	n.usage[c.UID].Containers[0].Rootfs = &statsapi.FsStats{UsedBytes: u64(600 * mi)}
	n.usage[c.UID].EphemeralStorage = &statsapi.FsStats{UsedBytes: u64(1000 * mi)}
	p := n.addPod("pod", "", "", 10*mi)
	p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}
	n.usage[p.UID].EphemeralStorage = &statsapi.FsStats{UsedBytes: u64(2 * gi)}
	m := newManager(t, n.options(t))
	sync1(t, m)
	got := map[string]string{}
	for _, e := range n.evicted {
		got[e.pod.Name] = e.e.Message
	}
	want := map[string]string{
		"container": `Container c exceeded its local ephemeral storage limit "1Gi". `,
		"pod":       "Pod ephemeral local storage usage exceeds the total limit of containers 1Gi. ",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// The pods' stats are read only when a pass looks at them: a pod with a
// local storage limit, or a threshold met. Reading every pod's stats from
// the runtime on every pass cost seconds at 100,000 pods.
func TestPodStatsReadOnlyWhenNeeded(t *testing.T) {
	n := newFakeNode()
	n.addPod("a", "", "", 10*mi)
	m := newManager(t, n.options(t))
	calls := func() int { n.mu.Lock(); defer n.mu.Unlock(); return n.podStatsCalls }
	sync1(t, m)
	if c := calls(); c != 0 {
		t.Fatalf("no threshold met, no storage limit: pod stats read %d times, want 0", c)
	}
	limit := resource.MustParse("1Gi")
	n.addPod("limited", "", "", 10*mi).Spec.Volumes = []v1.Volume{{Name: "scratch",
		VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
	n.clock.Step(10 * time.Second)
	sync1(t, m)
	if c := calls(); c != 1 {
		t.Fatalf("a pod with an emptyDir sizeLimit: pod stats read %d times, want 1", c)
	}
	if len(n.evicted) != 0 {
		t.Fatalf("evicted %v under the limit", n.evictedNames())
	}
	n.set(func(n *fakeNode) { n.memAvail = 10 * mi; n.pods = n.pods[:1] })
	n.clock.Step(10 * time.Second)
	sync1(t, m)
	if c := calls(); c != 2 {
		t.Fatalf("memory threshold met: pod stats read %d times in all, want 2", c)
	}
	if got := n.evictedNames(); !slices.Equal(got, []string{"a"}) || conds(m) != "MemoryPressure" {
		t.Fatalf("memory threshold met: evicted %v, conditions %q", got, conds(m))
	}
}

func TestNoEvictionOnMissingOrNonsenseStats(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(n *fakeNode)
	}{
		{"node stats fail", func(n *fakeNode) { n.nodeErr = errBoom }},
		{"pod stats fail", func(n *fakeNode) { n.memAvail = 10 * mi; n.podErr = errBoom }},
		{"nothing in the stats", func(n *fakeNode) { n.nodeStats = &statsapi.NodeStats{} }},
		{"more available than capacity", func(n *fakeNode) {
			n.nodeStats = &statsapi.NodeStats{
				Fs: &statsapi.FsStats{AvailableBytes: u64(10), CapacityBytes: u64(0)},
				Runtime: &statsapi.RuntimeStats{ImageFs: &statsapi.FsStats{
					AvailableBytes: u64(200 * gi), CapacityBytes: u64(100 * gi), InodesFree: u64(5), Inodes: u64(0)}},
				Rlimit: &statsapi.RlimitStats{MaxPID: new(int64), NumOfRunningProcesses: new(int64)},
			}
		}},
		{"working set overflows", func(n *fakeNode) {
			n.nodeStats = &statsapi.NodeStats{Memory: &statsapi.MemoryStats{AvailableBytes: u64(10), WorkingSetBytes: new(^uint64(0))}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newFakeNode()
			n.addPod("a", "", "", 10*mi)
			m := newManager(t, n.options(t))
			n.set(tc.set)
			for range 3 {
				_, _ = m.Synchronize(context.Background())
				n.clock.Step(10 * time.Second)
			}
			if len(n.evicted) != 0 {
				t.Fatalf("evicted %v", n.evictedNames())
			}
		})
	}
}

// A pass on stats no newer than the last pass's evicts nothing more.
func TestStaleStatsEvictOnce(t *testing.T) {
	n := newFakeNode()
	n.freeOnEvict = false
	n.staleTime = true
	n.addPod("a", "", "", 100*mi)
	n.addPod("b", "", "", 100*mi)
	m := newManager(t, n.options(t))
	n.set(func(n *fakeNode) { n.memAvail = 10 * mi })
	for range 3 {
		sync1(t, m)
		n.clock.Step(10 * time.Second)
	}
	if len(n.evicted) != 1 {
		t.Fatalf("evicted %v, want one pod", n.evictedNames())
	}
}

func TestClockJumps(t *testing.T) {
	n := newFakeNode()
	n.addPod("a", "", "", 100*mi)
	th, _ := ParseThresholds(map[string]string{"memory.available": "100Mi"}, map[string]string{"memory.available": "1Gi"}, map[string]string{"memory.available": "5m"}, nil)
	o := n.options(t)
	o.Thresholds = th
	m := newManager(t, o)
	n.set(func(n *fakeNode) { n.memAvail = 500 * mi }) // soft only
	sync1(t, m)
	n.clock.Step(-time.Hour)
	sync1(t, m)
	n.clock.Step(4 * time.Minute)
	sync1(t, m)
	if len(n.evicted) != 0 {
		t.Fatalf("evicted %v after the clock went back", n.evictedNames())
	}
	if !m.IsUnderMemoryPressure() {
		t.Fatal("MemoryPressure lost over a clock jump")
	}
	n.clock.Step(time.Minute + time.Second) // 5m since the jump
	sync1(t, m)
	if len(n.evicted) != 1 {
		t.Fatalf("evicted %v, want a once the grace period passed", n.evictedNames())
	}
	n.set(func(n *fakeNode) { n.memAvail = 2 * gi })
	// Pressure gone; the clock goes back: the condition stays on for the
	// transition period from the jump, then clears.
	n.clock.Step(-time.Hour)
	sync1(t, m)
	if !m.IsUnderMemoryPressure() {
		t.Fatal("MemoryPressure cleared by a clock jump")
	}
	n.clock.Step(DefaultPressureTransitionPeriod)
	sync1(t, m)
	if m.IsUnderMemoryPressure() {
		t.Fatal("MemoryPressure stuck after a clock jump")
	}
}

func TestCriticalPodsAreNotEvicted(t *testing.T) {
	n := newFakeNode()
	s := n.addPod("static", "", "", 900*mi)
	s.Annotations["kubernetes.io/config.source"] = "file"
	c := n.addPod("critical", "", "", 800*mi)
	prio := int32(systemCriticalPriority)
	c.Spec.Priority = &prio
	n.addPod("plain", "", "", 10*mi)
	m := newManager(t, n.options(t))
	n.set(func(n *fakeNode) { n.memAvail = 10 * mi })
	sync1(t, m)
	if got := n.evictedNames(); !slices.Equal(got, []string{"plain"}) {
		t.Fatalf("evicted %v", got)
	}
}

func TestPIDPressureRanksByPriorityThenProcesses(t *testing.T) {
	n := newFakeNode()
	a := n.addPod("few", "", "", 0)
	b := n.addPod("many", "", "", 0)
	h := n.addPod("high", "", "", 0)
	hp := int32(1000)
	h.Spec.Priority = &hp
	n.usage[a.UID].ProcessStats = &statsapi.ProcessStats{ProcessCount: u64(5)}
	n.usage[b.UID].ProcessStats = &statsapi.ProcessStats{ProcessCount: u64(500)}
	n.usage[h.UID].ProcessStats = &statsapi.ProcessStats{ProcessCount: u64(5000)}
	th, _ := ParseThresholds(map[string]string{"pid.available": "10%"}, nil, nil, nil)
	o := n.options(t)
	o.Thresholds = th
	m := newManager(t, o)
	n.set(func(n *fakeNode) { n.procs = 95000 })
	sync1(t, m)
	if got := n.evictedNames(); !slices.Equal(got, []string{"many"}) || conds(m) != "PIDPressure" {
		t.Fatalf("evicted %v, conditions %q", got, conds(m))
	}
}

func TestMinimumReclaimKeepsThresholdMet(t *testing.T) {
	n := newFakeNode()
	n.freeOnEvict = false
	n.addPod("a", "", "", 100*mi)
	n.addPod("b", "", "", 50*mi)
	th, _ := ParseThresholds(map[string]string{"memory.available": "100Mi"}, nil, nil, map[string]string{"memory.available": "500Mi"})
	o := n.options(t)
	o.Thresholds = th
	m := newManager(t, o)
	n.set(func(n *fakeNode) { n.memAvail = 50 * mi })
	sync1(t, m)
	n.set(func(n *fakeNode) { n.memAvail = 300 * mi }) // above 100Mi, below 100Mi+500Mi
	n.clock.Step(10 * time.Second)
	sync1(t, m)
	if got := n.evictedNames(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("evicted %v: the minimum reclaim was not met", got)
	}
}

func TestAdmit(t *testing.T) {
	n := newFakeNode()
	m := newManager(t, n.options(t))
	be := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	burst := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Mi")}}}}}}
	tolerant := be.DeepCopy()
	tolerant.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	static := be.DeepCopy()
	static.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	check := func(pod *v1.Pod, want bool, wantMsg string) {
		t.Helper()
		ok, reason, msg := m.Admit(pod)
		if ok != want || (!ok && (reason != "Evicted" || msg != wantMsg)) {
			t.Fatalf("Admit = %v %q %q, want %v %q", ok, reason, msg, want, wantMsg)
		}
	}
	check(be, true, "")
	n.set(func(n *fakeNode) { n.memAvail = 10 * mi })
	sync1(t, m)
	check(be, false, "The node had condition: [MemoryPressure]. ")
	check(burst, true, "")
	check(tolerant, true, "")
	check(static, true, "")
	n.set(func(n *fakeNode) { n.fsAvail = 1 * gi })
	sync1(t, m)
	check(burst, false, "The node had condition: [MemoryPressure DiskPressure]. ")
	check(tolerant, false, "The node had condition: [MemoryPressure DiskPressure]. ")
	check(static, true, "")
}

func TestRunStopsAndPacesPasses(t *testing.T) {
	n := newFakeNode()
	m := newManager(t, n.options(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	waitFor(t, func() bool { return m.Passes() == 1 && n.clock.HasWaiters() })
	n.clock.Step(DefaultMonitoringInterval)
	waitFor(t, func() bool { return m.Passes() == 2 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err == nil {
		t.Fatal("second Run accepted")
	}
}

func waitFor(t *testing.T, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}
