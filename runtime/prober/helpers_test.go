package prober_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/prober"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// execCall is one ExecSync call of the fake runtime, held until answered.
type execCall struct {
	containerID string
	cmd         []string
	timeout     time.Duration
	at          time.Time // the fake clock when the call came
	reply       chan execReply
}

type execReply struct {
	code int32
	err  error
}

// fakeExec is an Exec whose calls wait for the test to answer them, one
// command (the probe's first word) per channel. A worker is sequential: when
// its call n+1 arrives, the outcome of call n has been recorded and its
// Update delivered.
type fakeExec struct {
	clk *testclock.FakeClock
	mu  sync.Mutex
	chs map[string]chan *execCall
	n   map[string]int
}

func (f *fakeExec) ch(cmd string) chan *execCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.chs[cmd] == nil {
		f.chs[cmd] = make(chan *execCall)
	}
	return f.chs[cmd]
}

func (f *fakeExec) count(cmd string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[cmd]
}

func (f *fakeExec) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	c := &execCall{containerID: id, cmd: cmd, timeout: timeout, at: f.clk.Now(), reply: make(chan execReply, 1)}
	f.mu.Lock()
	f.n[cmd[0]]++
	f.mu.Unlock()
	select {
	case f.ch(cmd[0]) <- c:
	case <-ctx.Done():
		return nil, nil, 0, ctx.Err()
	}
	select {
	case r := <-c.reply:
		return []byte("out"), nil, r.code, r.err
	case <-ctx.Done():
		return nil, nil, 0, ctx.Err()
	}
}

type harness struct {
	t       *testing.T
	clk     *testclock.FakeClock
	exec    *fakeExec
	m       *prober.Manager
	updates chan prober.Update
	reg     *prometheus.Registry
}

// newHarness runs a Manager on a fake clock at t0 and the fake runtime
// (Rand 0: no jitter unless mutate sets it).
func newHarness(t *testing.T, mutate ...func(*prober.Options)) *harness {
	t.Helper()
	clk := testclock.NewFakeClock(t0)
	h := &harness{
		t: t, clk: clk,
		exec:    &fakeExec{clk: clk, chs: map[string]chan *execCall{}, n: map[string]int{}},
		updates: make(chan prober.Update, 100),
		reg:     prometheus.NewRegistry(),
	}
	o := prober.Options{
		Exec:       h.exec,
		Clock:      clk,
		Rand:       func() float64 { return 0 },
		Logger:     testr.New(t),
		OnResult:   func(u prober.Update) { h.updates <- u },
		Registerer: h.reg,
	}
	for _, f := range mutate {
		f(&o)
	}
	m, err := prober.New(o)
	if err != nil {
		t.Fatal(err)
	}
	h.m = m
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Run did not return 10 s after its context ended")
		}
	})
	return h
}

// call waits for the next call of command cmd; it fails the test if it
// came at another fake time than want.
func (h *harness) call(cmd string, want time.Time) *execCall {
	h.t.Helper()
	select {
	case c := <-h.exec.ch(cmd):
		if !c.at.Equal(want) {
			h.t.Fatalf("%s probe at t0+%v, want t0+%v", cmd, c.at.Sub(t0), want.Sub(t0))
		}
		return c
	case <-time.After(10 * time.Second):
		h.t.Fatalf("no %s probe (want one at t0+%v; clock at t0+%v)", cmd, want.Sub(t0), h.clk.Now().Sub(t0))
	}
	return nil
}

// probe waits for the call of cmd at want and answers it with code.
func (h *harness) probe(cmd string, want time.Time, code int32) *execCall {
	h.t.Helper()
	c := h.call(cmd, want)
	c.reply <- execReply{code: code}
	return c
}

func (h *harness) update() prober.Update {
	h.t.Helper()
	select {
	case u := <-h.updates:
		return u
	case <-time.After(10 * time.Second):
		h.t.Fatal("no update")
	}
	return prober.Update{}
}

// noUpdate checks that no update is queued (call it once a later probe call
// has arrived, which proves the earlier outcomes were recorded).
func (h *harness) noUpdate() {
	h.t.Helper()
	select {
	case u := <-h.updates:
		h.t.Fatalf("unexpected update %+v", u)
	default:
	}
}

func (h *harness) stepTo(at time.Time) { h.clk.SetTime(at) }

// eventually polls cond until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func execProbe(cmd string, mutate func(*v1.Probe)) *v1.Probe {
	p := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{cmd}}}}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func podWith(name string, containers ...v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{Containers: containers},
	}
}

func running(id string, at time.Time) map[string]prober.RunningContainer {
	return map[string]prober.RunningContainer{"c": {ID: id, StartedAt: at}}
}

func sec(n int) time.Duration { return time.Duration(n) * time.Second }

func mustGather(t *testing.T, h *harness) []*dto.MetricFamily {
	t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// counterValue returns the value of the prober_probe_total series of a
// probe type and result, or -1 when there is none.
func counterValue(t *testing.T, h *harness, probeType, result string) float64 {
	t.Helper()
	for _, mf := range mustGather(t, h) {
		if mf.GetName() != "prober_probe_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["probe_type"] == probeType && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

var errUnavailable = fmt.Errorf("exec: %w", runtime.ErrUnavailable)
