package shutdown

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func newPod(name string, priority *int32, grace *int64) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Generation: 3},
		Spec: v1.PodSpec{Priority: priority, TerminationGracePeriodSeconds: grace}}
}

func i32(v int32) *int32 { return &v }
func i64(v int64) *int64 { return &v }

func TestGroupPods(t *testing.T) {
	gs := []PriorityGracePeriod{{Priority: 1, ShutdownGracePeriodSeconds: 10}, {Priority: 100, ShutdownGracePeriodSeconds: 20}, {Priority: 1000, ShutdownGracePeriodSeconds: 30}}
	for _, tc := range []struct {
		name     string
		priority *int32
		want     int32
	}{
		{"unset below the lowest", nil, 1},
		{"below the lowest", i32(-5), 1},
		{"at the lowest", i32(1), 1},
		{"between", i32(99), 1},
		{"at the middle", i32(100), 100},
		{"above the highest", i32(2000000000), 1000},
		{"at the highest", i32(1000), 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := groupPods(gs, []*v1.Pod{newPod("p", tc.priority, nil)})
			for _, g := range out {
				if len(g.pods) == 1 {
					if g.Priority != tc.want {
						t.Errorf("pod in group %d, want %d", g.Priority, tc.want)
					}
					return
				}
			}
			t.Errorf("pod in no group")
		})
	}
}

func TestGroupsFromGracePeriods(t *testing.T) {
	o := Options{ShutdownGracePeriod: 30 * time.Second, ShutdownGracePeriodCriticalPods: 10 * time.Second}
	want := []PriorityGracePeriod{{Priority: 0, ShutdownGracePeriodSeconds: 20}, {Priority: 2000000000, ShutdownGracePeriodSeconds: 10}}
	if d := cmp.Diff(want, o.Groups()); d != "" {
		t.Errorf("groups (-want +got):\n%s", d)
	}
	o = Options{ShutdownGracePeriodByPodPriority: []PriorityGracePeriod{{Priority: 50, ShutdownGracePeriodSeconds: 5}, {Priority: -1, ShutdownGracePeriodSeconds: 7}}}
	want = []PriorityGracePeriod{{Priority: -1, ShutdownGracePeriodSeconds: 7}, {Priority: 50, ShutdownGracePeriodSeconds: 5}}
	if d := cmp.Diff(want, o.Groups()); d != "" {
		t.Errorf("groups by priority (-want +got):\n%s", d)
	}
}

func TestOptionsValidation(t *testing.T) {
	ok := Options{ActivePods: func() []*v1.Pod { return nil }, KillPod: func(context.Context, *v1.Pod, int64, func(*v1.PodStatus)) error { return nil }}
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"no grace period", func(o *Options) {}, "a grace period is required"},
		{"critical above total", func(o *Options) {
			o.ShutdownGracePeriod, o.ShutdownGracePeriodCriticalPods = 10*time.Second, 20*time.Second
		}, "must not exceed"},
		{"negative", func(o *Options) { o.ShutdownGracePeriod = -time.Second }, "must not be negative"},
		{"priority twice", func(o *Options) {
			o.ShutdownGracePeriodByPodPriority = []PriorityGracePeriod{{Priority: 1}, {Priority: 1}}
		}, "given twice"},
		{"both configurations", func(o *Options) {
			o.ShutdownGracePeriod = time.Minute
			o.ShutdownGracePeriodByPodPriority = []PriorityGracePeriod{{Priority: 1}}
		}, "exclude each other"},
		{"relative state file", func(o *Options) { o.ShutdownGracePeriod = time.Minute; o.StateFile = "state" }, "absolute"},
		{"no pods", func(o *Options) { o.ShutdownGracePeriod = time.Minute; o.ActivePods = nil }, "ActivePods is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			tc.edit(&o)
			_, err := New(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// killer is a KillFunc that records the kills and stops a pod when told
// (stop), or at once with instant.
type killer struct {
	mu      sync.Mutex
	kills   []string
	grace   map[string]int64
	status  map[string]v1.PodStatus
	stop    map[string]chan struct{}
	instant bool
	started chan string
}

func newKiller(instant bool) *killer {
	return &killer{grace: map[string]int64{}, status: map[string]v1.PodStatus{}, stop: map[string]chan struct{}{},
		instant: instant, started: make(chan string, 100)}
}

func (k *killer) kill(ctx context.Context, pod *v1.Pod, gp int64, fn func(*v1.PodStatus)) error {
	k.mu.Lock()
	k.kills = append(k.kills, pod.Name)
	k.grace[pod.Name] = gp
	ch := make(chan struct{})
	k.stop[pod.Name] = ch
	k.mu.Unlock()
	k.started <- pod.Name
	if !k.instant {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	st := v1.PodStatus{Phase: v1.PodRunning}
	fn(&st)
	k.mu.Lock()
	k.status[pod.Name] = st
	k.mu.Unlock()
	return nil
}

func (k *killer) release(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	close(k.stop[name])
}

func waitStarted(t *testing.T, k *killer, want ...string) {
	t.Helper()
	got := map[string]bool{}
	deadline := time.After(10 * time.Second)
	for len(got) < len(want) {
		select {
		case n := <-k.started:
			got[n] = true
		case <-deadline:
			t.Fatalf("kills started: %v, want %v", got, want)
		}
	}
	for _, w := range want {
		if !got[w] {
			t.Fatalf("kills started: %v, want %v", got, want)
		}
	}
}

func noMoreStarted(t *testing.T, k *killer) {
	t.Helper()
	select {
	case n := <-k.started:
		t.Fatalf("pod %s killed before its group's turn", n)
	default:
	}
}

// waitWaiters waits until the fake clock has a timer.
func waitWaiters(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("no timer on the clock")
		}
		time.Sleep(time.Millisecond) // polling a condition, with a deadline
	}
}

// A shutdown with three priorities stops them in order, lowest first, each
// pod with min(its grace period, its group's), and the next group starts
// only when the previous one has stopped.
func TestShutdownStopsGroupsInOrder(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	k := newKiller(false)
	pods := []*v1.Pod{
		newPod("critical", i32(SystemCriticalPriority), nil),
		newPod("low", nil, i64(3)),
		newPod("mid", i32(1000), i64(100)),
		newPod("low2", i32(5), nil),
	}
	synced := make(chan struct{})
	m, err := New(Options{
		ShutdownGracePeriodByPodPriority: []PriorityGracePeriod{
			{Priority: 0, ShutdownGracePeriodSeconds: 10},
			{Priority: 1000, ShutdownGracePeriodSeconds: 20},
			{Priority: SystemCriticalPriority, ShutdownGracePeriodSeconds: 30},
		},
		ActivePods: func() []*v1.Pod { return pods },
		KillPod:    k.kill,
		SyncNode:   func(context.Context) error { close(synced); return nil },
		Clock:      clk,
		Logger:     testr.New(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.Budget() != 60*time.Second {
		t.Errorf("budget %s, want 60s", m.Budget())
	}
	type out struct {
		res Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := m.Shutdown(context.Background())
		done <- out{res, err}
	}()
	waitStarted(t, k, "low", "low2")
	if !m.ShuttingDown() {
		t.Error("not shutting down")
	}
	noMoreStarted(t, k)
	k.release("low")
	noMoreStarted(t, k)
	k.release("low2")
	waitStarted(t, k, "mid")
	noMoreStarted(t, k)
	k.release("mid")
	waitStarted(t, k, "critical")
	k.release("critical")
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	<-synced
	wantGrace := map[string]int64{"low": 3, "low2": 10, "mid": 20, "critical": 30}
	if d := cmp.Diff(wantGrace, k.grace); d != "" {
		t.Errorf("grace periods (-want +got):\n%s", d)
	}
	if o.res.Pods != 4 || o.res.Stopped != 4 || o.res.Failed != 0 || len(o.res.TimedOut) != 0 {
		t.Errorf("result %+v", o.res)
	}
	st := k.status["mid"]
	want := v1.PodStatus{Phase: v1.PodFailed, Reason: "Terminated", Message: "Pod was terminated in response to imminent node shutdown.",
		Conditions: []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, ObservedGeneration: 3, Reason: "TerminationByKubelet",
			Message: "Pod was terminated in response to imminent node shutdown.", LastTransitionTime: metav1.NewTime(clk.Now())}}}
	if d := cmp.Diff(want, st); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	// A second call returns the first one's result.
	again, err := m.Shutdown(context.Background())
	if err != nil || again.Pods != 4 {
		t.Errorf("second Shutdown: %+v, %v", again, err)
	}
}

// A group whose pods do not stop within its grace period is left behind:
// the next group starts then.
func TestShutdownGroupTimesOut(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	k := newKiller(false)
	pods := []*v1.Pod{newPod("stuck", nil, nil), newPod("critical", i32(SystemCriticalPriority), nil)}
	m, err := New(Options{
		ShutdownGracePeriod: 30 * time.Second, ShutdownGracePeriodCriticalPods: 10 * time.Second,
		ActivePods: func() []*v1.Pod { return pods }, KillPod: k.kill, Clock: clk, Logger: testr.New(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan Result, 1)
	go func() {
		res, _ := m.Shutdown(context.Background())
		done <- res
	}()
	waitStarted(t, k, "stuck")
	waitWaiters(t, clk)
	clk.Step(19 * time.Second)
	noMoreStarted(t, k)
	clk.Step(time.Second)
	waitStarted(t, k, "critical")
	k.release("critical")
	res := <-done
	if res.Pods != 2 || res.Stopped != 1 || res.Failed != 1 || !cmp.Equal(res.TimedOut, []int32{0}) {
		t.Errorf("result %+v", res)
	}
	if k.grace["stuck"] != 20 || k.grace["critical"] != 10 {
		t.Errorf("grace periods %v", k.grace)
	}
}

func TestShutdownContextEnds(t *testing.T) {
	k := newKiller(false)
	m, err := New(Options{ShutdownGracePeriod: time.Minute, ActivePods: func() []*v1.Pod { return []*v1.Pod{newPod("p", nil, nil)} },
		KillPod: k.kill, Clock: clocktesting.NewFakeClock(time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := m.Shutdown(ctx)
		errc <- err
	}()
	waitStarted(t, k, "p")
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown: %v, want context.Canceled", err)
	}
}

func TestAdmitAndNode(t *testing.T) {
	m, err := New(Options{ShutdownGracePeriod: time.Minute, ActivePods: func() []*v1.Pod { return nil },
		KillPod: newKiller(true).kill, Clock: clocktesting.NewFakeClock(time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	ready := func() v1.NodeStatus {
		return v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady"}}}
	}
	st := ready()
	if admit, _, _ := m.AdmitPod(newPod("p", nil, nil)); !admit || m.ShutdownStatus() != nil {
		t.Error("refused before the shutdown")
	}
	_ = m.ConfigureNode(context.Background(), &st)
	if d := cmp.Diff(ready(), st); d != "" {
		t.Errorf("node changed before the shutdown:\n%s", d)
	}
	if _, err := m.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	admit, reason, msg := m.AdmitPod(newPod("p", nil, nil))
	if admit || reason != "NodeShutdown" || msg != "Pod was rejected as the node is shutting down." {
		t.Errorf("AdmitPod: %v %q %q", admit, reason, msg)
	}
	if err := m.ShutdownStatus(); err == nil || err.Error() != "node is shutting down" {
		t.Errorf("ShutdownStatus: %v", err)
	}
	_ = m.ConfigureNode(context.Background(), &st)
	want := []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "KubeletNotReady", Message: "node is shutting down"}}
	if d := cmp.Diff(want, st.Conditions); d != "" {
		t.Errorf("Ready (-want +got):\n%s", d)
	}
	st = v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "KubeletNotReady", Message: "container runtime is down"}}}
	_ = m.ConfigureNode(context.Background(), &st)
	if got := st.Conditions[0].Message; got != "[container runtime is down, node is shutting down]" {
		t.Errorf("message %q", got)
	}
}

// The metrics show the last shutdown, kept across a restart in the state
// file.
func TestMetricsAndState(t *testing.T) {
	file := filepath.Join(t.TempDir(), StateFileName)
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	reg := prometheus.NewPedanticRegistry()
	m, err := New(Options{ShutdownGracePeriod: time.Minute, ActivePods: func() []*v1.Pod { return nil },
		KillPod: newKiller(true).kill, Clock: clk, Registerer: reg, StateFile: file})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := `# HELP kubelet_graceful_shutdown_end_time_seconds Last graceful shutdown end time since unix epoch in seconds
# TYPE kubelet_graceful_shutdown_end_time_seconds gauge
kubelet_graceful_shutdown_end_time_seconds 1.767323045e+09
# HELP kubelet_graceful_shutdown_start_time_seconds Last graceful shutdown start time since unix epoch in seconds
# TYPE kubelet_graceful_shutdown_start_time_seconds gauge
kubelet_graceful_shutdown_start_time_seconds 1.767323045e+09
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}

	// After a restart, Run shows the state file's times.
	reg2 := prometheus.NewPedanticRegistry()
	m2, err := New(Options{ShutdownGracePeriod: time.Minute, ActivePods: func() []*v1.Pod { return nil },
		KillPod: newKiller(true).kill, Clock: clk, Registerer: reg2, StateFile: file})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- m2.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for testutil.GatherAndCompare(reg2, strings.NewReader(want)) != nil {
		if time.Now().After(deadline) {
			t.Fatal(testutil.GatherAndCompare(reg2, strings.NewReader(want)))
		}
		time.Sleep(time.Millisecond) // polling a condition, with a deadline
	}
	cancel()
	if err := <-errc; err != nil {
		t.Error(err)
	}
}
