package cri_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// drain returns the events recorded so far.
func drain(rec *record.FakeRecorder) string {
	var got []string
	for len(rec.Events) > 0 {
		got = append(got, <-rec.Events)
	}
	return strings.Join(got, "\n")
}

// execLog records the ExecSync calls a fakecri answers: "fail" exits 1,
// anything else 0.
type execLog struct {
	mu    sync.Mutex
	cmds  [][]string
	onRun func(fakecri.ExecRequest)
}

func (l *execLog) exec(_ context.Context, req fakecri.ExecRequest) (fakecri.ExecResult, error) {
	l.mu.Lock()
	l.cmds = append(l.cmds, req.Cmd)
	l.mu.Unlock()
	if l.onRun != nil {
		l.onRun(req)
	}
	if req.Cmd[0] == "fail" {
		return fakecri.ExecResult{ExitCode: 1, Stderr: []byte("no such thing")}, nil
	}
	return fakecri.ExecResult{}, nil
}

func (l *execLog) ran(cmd string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.cmds, func(c []string) bool { return strings.Join(c, " ") == cmd })
}

func execHandler(cmd ...string) *v1.LifecycleHandler {
	return &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: cmd}}
}

func runningID(t *testing.T, rt runtime.Runtime, pod *v1.Pod, name string) string {
	t.Helper()
	cs := podStatus(t, rt, pod).FindContainerStatusByName(name)
	if cs == nil || cs.State != runtime.ContainerStateRunning {
		t.Fatalf("container %s does not run: %+v", name, cs)
	}
	return cs.ID.ID
}

// A failing postStart kills the container, records FailedPostStartHook
// and makes SyncPod fail; a succeeding one lets it run.
func TestPostStartFailureKillsContainer(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	log := &execLog{}
	defer srv.SetExec(log.exec)()
	rt := newRuntime(t, ep)
	rec := record.NewFakeRecorder(100)
	rt.SetRecorder(rec)

	pod := testPod("poststart", v1.RestartPolicyAlways, v1.Container{Name: "c", Lifecycle: &v1.Lifecycle{PostStart: execHandler("fail", "now")}})
	err := rt.SyncPod(ctxT(t), pod, nil)
	if err == nil || !strings.Contains(err.Error(), "PostStartHookError") || !strings.Contains(err.Error(), "exited with 1") {
		t.Fatalf("SyncPod: %v, want a PostStartHookError naming the exit code", err)
	}
	if !log.ran("fail now") {
		t.Errorf("the postStart command did not run: %v", log.cmds)
	}
	cs := podStatus(t, rt, pod).FindContainerStatusByName("c")
	if cs == nil || cs.State != runtime.ContainerStateExited {
		t.Fatalf("container after a failed postStart: %+v, want exited", cs)
	}
	if ev := drain(rec); !strings.Contains(ev, "Warning FailedPostStartHook PostStartHook failed") {
		t.Errorf("no FailedPostStartHook warning among:\n%s", ev)
	}

	ok := testPod("poststart-ok", v1.RestartPolicyAlways, v1.Container{Name: "c", Lifecycle: &v1.Lifecycle{PostStart: execHandler("touch", "/ready")}})
	if err := rt.SyncPod(ctxT(t), ok, nil); err != nil {
		t.Fatal(err)
	}
	runningID(t, rt, ok, "c")
	if !log.ran("touch /ready") {
		t.Errorf("the postStart command did not run: %v", log.cmds)
	}
}

// preStop runs before StopContainer, and its time (on the injected clock)
// comes out of the grace period.
func TestPreStopTakesItsTimeFromTheGracePeriod(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := newRuntime(t, ep, func(o *cri.Options) { o.Clock = clk })
	grace := int64(30)
	pod := testPod("prestop-sleep", v1.RestartPolicyAlways, v1.Container{Name: "c", Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 5}}}})
	pod.Spec.TerminationGracePeriodSeconds = &grace
	if err := rt.SyncPod(ctxT(t), pod, nil); err != nil {
		t.Fatal(err)
	}
	id := runningID(t, rt, pod, "c")
	done := make(chan error, 1)
	go func() { done <- rt.KillPod(ctxT(t), pod, nil, nil) }()
	// Two timers: the grace period's and the hook's sleep. Stepping once
	// only the first exists would leave the sleep waiting for ever.
	eventually(t, 10*time.Second, "the preStop sleep to wait on the clock", func() bool { return clk.Waiters() >= 2 })
	if srv.CallCount("StopContainer") != 0 {
		t.Fatal("StopContainer called while preStop sleeps")
	}
	clk.Step(5 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, _ := srv.StopTimeout(id); got != 25 {
		t.Errorf("StopContainer timeout %d, want 30-5 = 25", got)
	}

	// A hook that outlasts the grace period is cut short, and the stop
	// still gets the minimum.
	pod = testPod("prestop-long", v1.RestartPolicyAlways, v1.Container{Name: "c", Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 600}}}})
	grace = 10
	pod.Spec.TerminationGracePeriodSeconds = &grace
	if err := rt.SyncPod(ctxT(t), pod, nil); err != nil {
		t.Fatal(err)
	}
	id = runningID(t, rt, pod, "c")
	done = make(chan error, 1)
	go func() { done <- rt.KillPod(ctxT(t), pod, nil, nil) }()
	deadline := time.After(10 * time.Second)
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		case <-deadline:
			t.Fatal("KillPod did not return after the grace period passed on the clock")
		case <-time.After(time.Millisecond):
			if clk.HasWaiters() {
				clk.Step(time.Second)
			}
		}
	}
	if got, _ := srv.StopTimeout(id); got != cri.MinimumGracePeriod {
		t.Errorf("StopContainer timeout %d, want the minimum %d", got, cri.MinimumGracePeriod)
	}
}

// An exec preStop runs in the running container before StopContainer, in
// KillPod (sidecars too, after the regular containers) and in
// KillContainer (from what was recorded on the container); a failing one
// records FailedPreStopHook and the stop goes on.
func TestPreStopExecBeforeStop(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	log := &execLog{}
	var mu sync.Mutex
	var ids map[string]string // container name → ID, set before KillPod
	// At each hook, which containers had been stopped. The regular
	// containers are stopped in parallel, so only a container's own stop
	// and the sidecar's order say anything.
	stoppedAtExec := map[string]map[string]bool{}
	log.onRun = func(req fakecri.ExecRequest) {
		mu.Lock()
		defer mu.Unlock()
		stopped := map[string]bool{}
		for name, id := range ids {
			_, stopped[name] = srv.StopTimeout(id)
		}
		stoppedAtExec[strings.Join(req.Cmd, " ")] = stopped
	}
	defer srv.SetExec(log.exec)()
	rt := newRuntime(t, ep)
	rec := record.NewFakeRecorder(100)
	rt.SetRecorder(rec)
	always := v1.ContainerRestartPolicyAlways
	pod := testPod("prestop-exec", v1.RestartPolicyAlways,
		v1.Container{Name: "main", Lifecycle: &v1.Lifecycle{PreStop: execHandler("drain", "main")}},
		v1.Container{Name: "bad", Lifecycle: &v1.Lifecycle{PreStop: execHandler("fail")}})
	pod.Spec.InitContainers = []v1.Container{{Name: "side", Image: testImage, RestartPolicy: &always, Lifecycle: &v1.Lifecycle{PreStop: execHandler("drain", "side")}}}
	for range 3 { // the sidecar, then the regular containers
		_ = rt.SyncPod(ctxT(t), pod, nil)
	}
	mu.Lock()
	ids = map[string]string{"main": runningID(t, rt, pod, "main"), "bad": runningID(t, rt, pod, "bad"), "side": runningID(t, rt, pod, "side")}
	mu.Unlock()
	if err := rt.KillPod(ctxT(t), pod, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"drain main", "fail", "drain side"} {
		if !log.ran(cmd) {
			t.Errorf("preStop %q did not run: %v", cmd, log.cmds)
		}
	}
	mu.Lock()
	if stoppedAtExec["drain main"]["main"] {
		t.Error("main's preStop ran after main was stopped, want before")
	}
	if s := stoppedAtExec["drain side"]; !s["main"] || !s["bad"] || s["side"] {
		t.Errorf("at the sidecar's preStop, stopped: %v; want main and bad (the regular containers), not the sidecar", s)
	}
	mu.Unlock()
	if _, running := srv.RunningCounts(); running != 0 {
		t.Errorf("%d containers still run after a failed preStop", running)
	}
	if ev := drain(rec); !strings.Contains(ev, "Warning FailedPreStopHook PreStopHook failed") {
		t.Errorf("no FailedPreStopHook warning among:\n%s", ev)
	}

	// KillContainer (a failed liveness probe) knows the hook from the
	// container's annotations alone.
	one := testPod("prestop-one", v1.RestartPolicyAlways, v1.Container{Name: "c", Lifecycle: &v1.Lifecycle{PreStop: execHandler("drain", "one")}})
	if err := rt.SyncPod(ctxT(t), one, nil); err != nil {
		t.Fatal(err)
	}
	id := runningID(t, rt, one, "c")
	if err := rt.KillContainer(ctxT(t), runtime.ContainerID{ID: id}, 30); err != nil {
		t.Fatal(err)
	}
	if !log.ran("drain one") {
		t.Errorf("KillContainer did not run the preStop hook: %v", log.cmds)
	}
	// Without grace (a forced kill) the hook does not run, as in the kubelet.
	forced := testPod("prestop-forced", v1.RestartPolicyAlways, v1.Container{Name: "c", Lifecycle: &v1.Lifecycle{PreStop: execHandler("drain", "forced")}})
	if err := rt.SyncPod(ctxT(t), forced, nil); err != nil {
		t.Fatal(err)
	}
	zero := int64(0)
	if err := rt.KillPod(ctxT(t), forced, nil, &zero); err != nil {
		t.Fatal(err)
	}
	if log.ran("drain forced") {
		t.Error("a preStop hook ran with a zero grace period")
	}
}

// An httpGet hook reaches the pod (127.0.0.1 for a pod on the node's
// network) on its named port, with path, query and headers.
func TestHTTPGetHook(t *testing.T) {
	type hit struct{ path, query, header, host string }
	hits := make(chan hit, 4)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		hits <- hit{req.URL.Path, req.URL.RawQuery, req.Header.Get("X-Hook"), req.Host}
		w.WriteHeader(http.StatusInternalServerError) // the kubelet ignores the status
	}))
	defer ts.Close()
	_, portStr, _ := net.SplitHostPort(ts.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)

	_, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	h := &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/started?x=1", Port: intstr.FromString("web"),
		HTTPHeaders: []v1.HTTPHeader{{Name: "X-Hook", Value: "yes"}, {Name: "Host", Value: "example.test"}}}}
	pod := testPod("http", v1.RestartPolicyAlways, v1.Container{Name: "c", Ports: []v1.ContainerPort{{Name: "web", ContainerPort: int32(port)}},
		Lifecycle: &v1.Lifecycle{PostStart: h, PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/stopping", Port: intstr.FromInt32(int32(port))}}}})
	if err := rt.SyncPod(ctxT(t), pod, nil); err != nil {
		t.Fatal(err)
	}
	got := <-hits
	if got != (hit{"/started", "x=1", "yes", "example.test"}) {
		t.Errorf("postStart request %+v", got)
	}
	if err := rt.KillPod(ctxT(t), pod, nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := <-hits; got.path != "/stopping" {
		t.Errorf("preStop request %+v", got)
	}

	// Nobody listening: the hook fails.
	ts.Close()
	bad := testPod("http-bad", v1.RestartPolicyAlways, v1.Container{Name: "c", Lifecycle: &v1.Lifecycle{PostStart: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(int32(port))}}}})
	if err := rt.SyncPod(ctxT(t), bad, nil); err == nil || !strings.Contains(err.Error(), "HTTP lifecycle hook") {
		t.Errorf("SyncPod with an unreachable httpGet postStart: %v", err)
	}
}

// A sleep postStart holds SyncPod for its seconds on the injected clock.
func TestSleepPostStart(t *testing.T) {
	_, ep := startFake(t, fakecri.Options{})
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := newRuntime(t, ep, func(o *cri.Options) { o.Clock = clk })
	pod := testPod("sleep", v1.RestartPolicyAlways, v1.Container{Name: "c", Lifecycle: &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 3}}}})
	done := make(chan error, 1)
	go func() { done <- rt.SyncPod(ctxT(t), pod, nil) }()
	eventually(t, 10*time.Second, "the postStart sleep to wait on the clock", clk.HasWaiters)
	select {
	case err := <-done:
		t.Fatalf("SyncPod returned before the sleep ended: %v", err)
	default:
	}
	clk.Step(3 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	runningID(t, rt, pod, "c")
}
