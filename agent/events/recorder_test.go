package events_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/agent/events"
)

func testPod() *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}}
}

// run starts r and returns a func that stops it and waits for Run.
func run(t *testing.T, r *events.Recorder) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := r.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	stop = func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	return stop
}

func waitEvents(t *testing.T, client *fake.Clientset, n int) []v1.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		list, err := client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err == nil && len(list.Items) >= n {
			return list.Items
		}
		if time.Now().After(deadline) {
			t.Fatalf("want %d events in the API, have %v (err %v)", n, list, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRecorderSendsEventsWithSource(t *testing.T) {
	client := fake.NewClientset()
	reg := prometheus.NewRegistry()
	r, err := events.New(events.Options{Client: client, NodeName: "n1", Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	// Before Run: dropped, counted.
	r.Eventf(testPod(), v1.EventTypeNormal, "Pulling", "Pulling image %q", "img")
	// Checked before Run starts: the loop below may drop more events
	// while Run is still installing its recorder.
	if got := counter(t, reg, "podlife_events_dropped_total", "reason", events.DropNotRunning); got != 1 {
		t.Errorf("dropped before Run = %v, want 1", got)
	}
	run(t, r)
	// Run installs the recorder before it blocks; wait for it through the
	// metric of a recorded event.
	deadline := time.Now().Add(10 * time.Second)
	for counter(t, reg, "podlife_events_recorded_total", "", "") == 0 {
		r.Eventf(testPod(), v1.EventTypeNormal, "Started", "Started container %s", "c")
		if time.Now().After(deadline) {
			t.Fatal("no event recorded after Run started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.Event(testPod(), v1.EventTypeWarning, "FailedSync", "error syncing pod")
	evs := waitEvents(t, client, 2)
	var sawWarning bool
	for _, e := range evs {
		if e.Source.Component != "podlife" || e.Source.Host != "n1" || e.InvolvedObject.UID != "u1" {
			t.Errorf("event %s: source %+v, involved %+v", e.Reason, e.Source, e.InvolvedObject)
		}
		if e.Reason == "FailedSync" && e.Type == v1.EventTypeWarning {
			sawWarning = true
		}
	}
	if !sawWarning {
		t.Errorf("no FailedSync warning among %v", evs)
	}
}

func TestRecorderRateLimitDropsAndCounts(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	reg := prometheus.NewRegistry()
	r, err := events.New(events.Options{Client: fake.NewClientset(), NodeName: "n1", QPS: 1, Burst: 2, Clock: clk, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	run(t, r)
	waitRunning(t, r, reg)
	// waitRunning spent the bucket's tokens: refill it.
	clk.SetTime(clk.Now().Add(10 * time.Second))
	for range 5 {
		r.Event(testPod(), v1.EventTypeNormal, "Pulled", "x")
	}
	dropped := func() float64 { return counter(t, reg, "podlife_events_dropped_total", "reason", events.DropRateLimit) }
	before := dropped()
	clk.SetTime(clk.Now().Add(time.Second))
	r.Event(testPod(), v1.EventTypeNormal, "Pulled", "x")
	if got := dropped(); got != before {
		t.Errorf("an event one second later was dropped too (dropped %v -> %v)", before, got)
	}
	if before < 3 {
		t.Errorf("5 events at burst 2: %v dropped, want at least 3", before)
	}
}

func TestOptionsValidation(t *testing.T) {
	for _, o := range []events.Options{
		{NodeName: "n"},
		{Client: fake.NewClientset()},
		{Client: fake.NewClientset(), NodeName: "n", QPS: -1},
	} {
		if _, err := events.New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

// waitRunning records events until one is accepted (Run has installed its
// recorder).
func waitRunning(t *testing.T, r *events.Recorder, reg *prometheus.Registry) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for counter(t, reg, "podlife_events_recorded_total", "", "") == 0 {
		r.Event(testPod(), v1.EventTypeNormal, "Probe", "x")
		if time.Now().After(deadline) {
			t.Fatal("Run did not start recording")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// counter returns the value of a counter of reg, summed over the series
// whose label has value (every series when label is "").
func counter(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if label == "" || l.GetName() == label && l.GetValue() == value {
					sum += m.GetCounter().GetValue()
					break
				}
			}
		}
	}
	return sum
}
