package status

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
)

// podStates is a PodStates whose answers a test sets.
type podStates struct {
	mu      sync.Mutex
	running map[types.UID]bool
}

func (p *podStates) CouldHaveRunningContainers(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running[uid]
}

func (p *podStates) set(uid types.UID, running bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running == nil {
		p.running = map[types.UID]bool{}
	}
	p.running[uid] = running
}

// harness runs a Manager against a fake clientset and a fake clock, and
// records every request.
type harness struct {
	t        *testing.T
	client   *fake.Clientset
	clock    *testingclock.FakeClock
	states   *podStates
	m        *Manager
	mu       sync.Mutex
	actions  []k8stesting.Action
	recorder k8stesting.Reactor
	releases []func()
}

// react adds a reactor that runs after the recorder and before every other
// one.
func (h *harness) react(verb, resource string, fn k8stesting.ReactionFunc) {
	h.client.PrependReactor(verb, resource, fn)
	chain := h.client.ReactionChain
	// chain[0] is fn, chain[1] the recorder: swap them.
	chain[0], chain[1] = chain[1], chain[0]
}

// blocker returns a channel that reactors wait on and that is closed at
// cleanup at the latest (before the Manager stops), or earlier by release.
// Call it, and react, before run.
func (h *harness) blocker() (wait <-chan struct{}, release func()) {
	ch := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	h.releases = append(h.releases, release)
	return ch, release
}

func newHarness(t *testing.T, mutate func(*Options), pods ...*v1.Pod) *harness {
	t.Helper()
	objs := make([]runtime.Object, 0, len(pods))
	for _, p := range pods {
		objs = append(objs, p.DeepCopy())
	}
	h := &harness{
		t:      t,
		client: fake.NewClientset(objs...),
		clock:  testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		states: &podStates{},
	}
	h.client.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		h.mu.Lock()
		h.actions = append(h.actions, a.DeepCopy())
		h.mu.Unlock()
		return false, nil, nil
	})
	h.recorder = h.client.ReactionChain[0]
	opts := Options{
		Client:    h.client,
		PodStates: h.states,
		Logger:    testr.New(t),
		Clock:     h.clock,
		Rand:      func() float64 { return 0 },
		Workers:   3,
	}
	if mutate != nil {
		mutate(&opts)
	}
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	h.m = m
	return h
}

// run starts the Manager and stops it at cleanup.
func (h *harness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.m.Run(ctx) }()
	h.t.Cleanup(func() {
		for _, r := range h.releases {
			r()
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			h.t.Errorf("Run: %v", err)
		}
	})
}

// requests returns the verbs (verb or verb/subresource) of the requests so
// far.
func (h *harness) requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, a := range h.actions {
		v := a.GetVerb()
		if s := a.GetSubresource(); s != "" {
			v += "/" + s
		}
		out = append(out, v)
	}
	return out
}

func (h *harness) count(verb string) int {
	n := 0
	for _, v := range h.requests() {
		if v == verb {
			n++
		}
	}
	return n
}

// patches returns the bodies of the status patches so far.
func (h *harness) patches() []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]any
	for _, a := range h.actions {
		if p, ok := a.(k8stesting.PatchAction); ok {
			var body map[string]any
			if err := json.Unmarshal(p.GetPatch(), &body); err != nil {
				h.t.Fatalf("patch %s: %v", p.GetPatch(), err)
			}
			out = append(out, body)
		}
	}
	return out
}

// settle waits until nothing is pending, with a deadline.
func (h *harness) settle() {
	h.t.Helper()
	h.eventually("nothing pending", func() bool { return h.m.Pending() == 0 })
}

func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("not true after 10s: %s (requests %v)", what, h.requests())
		}
		time.Sleep(time.Millisecond)
	}
}

// apiPod reads the pod from the fake clientset.
func (h *harness) apiPod(p *v1.Pod) *v1.Pod {
	h.t.Helper()
	got, err := h.client.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), p.Namespace, p.Name)
	if err != nil {
		h.t.Fatalf("get %s: %v", p.Name, err)
	}
	return got.(*v1.Pod)
}

// stepUntilSettled steps the fake clock by d while something is pending.
func (h *harness) stepUntilSettled(d time.Duration) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for h.m.Pending() > 0 {
		if time.Now().After(deadline) {
			h.t.Fatalf("still %d pending (requests %v)", h.m.Pending(), h.requests())
		}
		if h.clock.HasWaiters() {
			h.clock.Step(d)
		}
		time.Sleep(time.Millisecond)
	}
}

// reconcileAndSettle steps the clock until the Manager has run one more
// full reconcile, then waits for what it queued to be written: a terminal
// phase held back while containers could run is released by the reconcile
// (or by the next status), not when the answer of PodStates changes.
func (h *harness) reconcileAndSettle() {
	h.t.Helper()
	target := h.m.Reconciles() + 1
	deadline := time.Now().Add(10 * time.Second)
	for h.m.Reconciles() < target {
		if time.Now().After(deadline) {
			h.t.Fatalf("no reconcile after stepping the clock (requests %v)", h.requests())
		}
		if h.clock.HasWaiters() {
			h.clock.Step(DefaultReconcileInterval)
		}
		time.Sleep(time.Millisecond)
	}
	h.stepUntilSettled(time.Second)
}

func testPod(name string, uid types.UID) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid},
		Spec:       v1.PodSpec{NodeName: "node", Containers: []v1.Container{{Name: "c", Image: "i"}}},
		Status:     v1.PodStatus{Phase: v1.PodPending, QOSClass: v1.PodQOSBestEffort},
	}
}

func running(msg string) v1.PodStatus {
	return v1.PodStatus{
		Phase:   v1.PodRunning,
		Message: msg,
		Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: v1.ConditionTrue},
		},
	}
}

func terminal(phase v1.PodPhase) v1.PodStatus {
	return v1.PodStatus{
		Phase: phase,
		Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "PodCompleted"},
		},
	}
}

func statusPhase(body map[string]any) string {
	st, _ := body["status"].(map[string]any)
	p, _ := st["phase"].(string)
	return p
}

func (h *harness) actionsOf(verb string) []k8stesting.Action {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []k8stesting.Action
	for _, a := range h.actions {
		if a.GetVerb() == verb {
			out = append(out, a)
		}
	}
	return out
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
