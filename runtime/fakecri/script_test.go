package fakecri_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/runtime/fakecri"
)

// scriptEnv is a server on a fake clock with one ready sandbox.
type scriptEnv struct {
	t         *testing.T
	s         *fakecri.Server
	c         client
	clk       *clocktesting.FakeClock
	ctx       context.Context
	sandboxID string
}

func newScriptEnv(t *testing.T, opts fakecri.Options) *scriptEnv {
	t.Helper()
	e := &scriptEnv{t: t, clk: clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0)), ctx: ctx(t)}
	opts.Clock = e.clk
	opts.Images = append(opts.Images, "img")
	e.s, e.c = start(t, opts)
	sb, err := e.c.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("a")})
	if err != nil {
		t.Fatal(err)
	}
	e.sandboxID = sb.GetPodSandboxId()
	return e
}

// byName scripts containers by their name; other containers follow their
// arguments.
func byName(scripts map[string]fakecri.ContainerScript) func(*runtimeapi.PodSandboxConfig, *runtimeapi.ContainerConfig) (fakecri.ContainerScript, bool) {
	return func(_ *runtimeapi.PodSandboxConfig, c *runtimeapi.ContainerConfig) (fakecri.ContainerScript, bool) {
		sc, ok := scripts[c.GetMetadata().GetName()]
		return sc, ok
	}
}

// run creates and starts a container in the sandbox.
func (e *scriptEnv) run(name string, args ...string) string {
	e.t.Helper()
	r, err := e.c.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: e.sandboxID, Config: containerConfig(name, "img", args...)})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.c.StartContainer(e.ctx, &runtimeapi.StartContainerRequest{ContainerId: r.GetContainerId()}); err != nil {
		e.t.Fatal(err)
	}
	return r.GetContainerId()
}

func (e *scriptEnv) status(id string) *runtimeapi.ContainerStatus {
	e.t.Helper()
	r, err := e.c.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		e.t.Fatalf("ContainerStatus(%s): %v", id, err)
	}
	return r.GetStatus()
}

// stop calls StopContainer in a goroutine; the channel gets its error.
func (e *scriptEnv) stop(ctx context.Context, id string, timeout int64) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := e.c.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: timeout})
		done <- err
	}()
	return done
}

// eventually waits, up to a deadline, until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-time.After(time.Millisecond)
	}
}

func (e *scriptEnv) waitExited(id string) *runtimeapi.ContainerStatus {
	e.t.Helper()
	var st *runtimeapi.ContainerStatus
	eventually(e.t, "container "+id+" to exit", func() bool {
		st = e.status(id)
		return st.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED
	})
	return st
}

func (e *scriptEnv) waitWaiters(n int) {
	e.t.Helper()
	eventually(e.t, "clock waiters", func() bool { return e.clk.Waiters() == n })
}

func checkExit(t *testing.T, st *runtimeapi.ContainerStatus, code int32, reason, message string) {
	t.Helper()
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || st.GetExitCode() != code || st.GetReason() != reason || st.GetMessage() != message {
		t.Fatalf("got %s exit %d %q %q, want EXITED exit %d %q %q", st.GetState(), st.GetExitCode(), st.GetReason(), st.GetMessage(), code, reason, message)
	}
}

func checkRunning(t *testing.T, st *runtimeapi.ContainerStatus) {
	t.Helper()
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("container %s: %s, want RUNNING", st.GetMetadata().GetName(), st.GetState())
	}
}

// A scripted container exits by itself RunFor after its start on the
// server's clock, not a nanosecond before; exits are served in time order,
// and RunFor 0 exits at once. The script sees the configs as received.
func TestScriptTimedExit(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	scripts := byName(map[string]fakecri.ContainerScript{
		"job":  {Exit: true, ExitCode: 3, RunFor: 10 * time.Second},
		"done": {Exit: true, ExitCode: 0, RunFor: 5 * time.Second},
		"now":  {Exit: true, ExitCode: 2},
	})
	e := newScriptEnv(t, fakecri.Options{Script: func(sb *runtimeapi.PodSandboxConfig, c *runtimeapi.ContainerConfig) (fakecri.ContainerScript, bool) {
		mu.Lock()
		seen = append(seen, sb.GetMetadata().GetName()+"/"+c.GetMetadata().GetName())
		mu.Unlock()
		return scripts(sb, c)
	}})
	job, done, now := e.run("job"), e.run("done"), e.run("now")
	checkExit(t, e.status(now), 2, "Error", "")
	mu.Lock()
	if got := seen; len(got) != 3 || got[0] != "p-a/job" || got[2] != "p-a/now" {
		t.Errorf("script calls: %v", got)
	}
	mu.Unlock()

	e.clk.Step(5*time.Second - time.Nanosecond)
	checkRunning(t, e.status(done))
	e.clk.Step(time.Nanosecond)
	checkExit(t, e.waitExited(done), 0, "Completed", "")
	checkRunning(t, e.status(job))

	e.clk.Step(5*time.Second - time.Nanosecond)
	checkRunning(t, e.status(job))
	e.clk.Step(time.Nanosecond)
	st := e.waitExited(job)
	checkExit(t, st, 3, "Error", "")
	if d := time.Duration(st.GetFinishedAt() - st.GetStartedAt()); d != 10*time.Second {
		t.Errorf("job ran %v, want 10s", d)
	}
	if n := e.clk.Waiters(); n != 0 {
		t.Errorf("%d clock waiters with no exit pending", n)
	}
}

// Whatever ends or removes a container first cancels its timed exit (no
// timer is left for it); the other containers keep theirs.
func TestScriptTimedExitCancelled(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cancel func(e *scriptEnv, id string) error
		code   int32 // the exit that stands; -1: the container is gone
	}{
		{"StopContainer", func(e *scriptEnv, id string) error { return <-e.stop(e.ctx, id, 30) }, 0},
		{"ExitContainer", func(e *scriptEnv, id string) error { return e.s.ExitContainer(id, 5) }, 5},
		{"StopSandbox", func(e *scriptEnv, _ string) error { return e.s.StopSandbox(e.sandboxID) }, 137},
		{"StopPodSandbox", func(e *scriptEnv, _ string) error {
			_, err := e.c.StopPodSandbox(e.ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: e.sandboxID})
			return err
		}, 137},
		{"RemoveContainer", func(e *scriptEnv, id string) error {
			_, err := e.c.RemoveContainer(e.ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
			return err
		}, -1},
		{"Forget", func(e *scriptEnv, id string) error { return e.s.Forget(id) }, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newScriptEnv(t, fakecri.Options{Script: byName(map[string]fakecri.ContainerScript{
				"job":  {Exit: true, ExitCode: 3, RunFor: 10 * time.Second},
				"keep": {Exit: true, ExitCode: 9, RunFor: 5 * time.Second},
			})})
			job := e.run("job")
			other, err := e.c.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("b")})
			if err != nil {
				t.Fatal(err)
			}
			r, err := e.c.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: other.GetPodSandboxId(), Config: containerConfig("keep", "img")})
			if err != nil {
				t.Fatal(err)
			}
			keep := r.GetContainerId()
			if _, err := e.c.StartContainer(e.ctx, &runtimeapi.StartContainerRequest{ContainerId: keep}); err != nil {
				t.Fatal(err)
			}
			if err := tc.cancel(e, job); err != nil {
				t.Fatal(err)
			}
			e.clk.Step(5 * time.Second)
			checkExit(t, e.waitExited(keep), 9, "Error", "")
			if n := e.clk.Waiters(); n != 0 {
				t.Fatalf("%d clock waiters: the cancelled exit is still pending", n)
			}
			e.clk.Step(5 * time.Second)
			if tc.code < 0 {
				if _, err := e.c.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: job}); code(err) != codes.NotFound {
					t.Fatalf("status of the removed container: %v", err)
				}
			} else if st := e.status(job); st.GetExitCode() != tc.code {
				t.Fatalf("exit %d (%s), want %d", st.GetExitCode(), st.GetReason(), tc.code)
			}
		})
	}
}

// StopContainer of a scripted container waits its TermDelay and exits with
// TermExitCode, or kills it at a shorter timeout, as "hang" does.
func TestScriptTermDelay(t *testing.T) {
	const killed = "killed after the grace period"
	for _, tc := range []struct {
		name      string
		delay     time.Duration
		exitCode  int32
		timeout   int64
		wait      time.Duration
		code      int32
		reason    string
		message   string
		waitsStop bool
	}{
		{"exits 0 before the timeout", 5 * time.Second, 0, 10, 5 * time.Second, 0, "Completed", "", true},
		{"exits 2 before the timeout", 5 * time.Second, 2, 10, 5 * time.Second, 2, "Error", "", true},
		{"exits at the timeout", 10 * time.Second, 0, 10, 10 * time.Second, 0, "Completed", "", true},
		{"killed at the timeout", 30 * time.Second, 0, 10, 10 * time.Second, 137, "Error", killed, true},
		{"killed at once with timeout 0", 5 * time.Second, 0, 0, 0, 137, "Error", killed, false},
		{"no delay", 0, 1, 10, 0, 1, "Error", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newScriptEnv(t, fakecri.Options{Script: byName(map[string]fakecri.ContainerScript{
				"app": {TermDelay: tc.delay, TermExitCode: tc.exitCode},
			})})
			id := e.run("app")
			done := e.stop(e.ctx, id, tc.timeout)
			if tc.waitsStop {
				e.waitWaiters(1)
				e.clk.Step(tc.wait - time.Nanosecond)
				checkRunning(t, e.status(id))
				select {
				case err := <-done:
					t.Fatalf("StopContainer returned before its time: %v", err)
				default:
				}
				e.clk.Step(time.Nanosecond)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			st := e.status(id)
			checkExit(t, st, tc.code, tc.reason, tc.message)
			if d := time.Duration(st.GetFinishedAt() - st.GetStartedAt()); d != tc.wait {
				t.Errorf("stopped after %v, want %v", d, tc.wait)
			}
		})
	}
}

// A container that exits by itself while a StopContainer waits for it
// keeps its own exit; the stop still returns when its wait ends.
func TestScriptExitWhileStopWaits(t *testing.T) {
	e := newScriptEnv(t, fakecri.Options{Script: byName(map[string]fakecri.ContainerScript{
		"app": {Exit: true, ExitCode: 7, RunFor: 3 * time.Second, TermDelay: 10 * time.Second},
	})})
	id := e.run("app")
	done := e.stop(e.ctx, id, 30)
	e.waitWaiters(2) // the timed exit and the stop
	e.clk.Step(3 * time.Second)
	checkExit(t, e.waitExited(id), 7, "Error", "")
	e.clk.Step(7*time.Second - time.Nanosecond)
	select {
	case err := <-done:
		t.Fatalf("StopContainer returned before its time: %v", err)
	default:
	}
	e.clk.Step(time.Nanosecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st := e.status(id)
	checkExit(t, st, 7, "Error", "")
	if d := time.Duration(st.GetFinishedAt() - st.GetStartedAt()); d != 3*time.Second {
		t.Errorf("exited after %v, want its own 3s", d)
	}
}

// The client's deadline cuts a TermDelay short, as it does a "hang"; the
// container goes on running.
func TestScriptTermDelayCutByContext(t *testing.T) {
	e := newScriptEnv(t, fakecri.Options{Script: byName(map[string]fakecri.ContainerScript{
		"app": {TermDelay: time.Hour},
	})})
	id := e.run("app")
	short, cancel := context.WithTimeout(e.ctx, 50*time.Millisecond)
	defer cancel()
	if err := <-e.stop(short, id, 7200); code(err) != codes.DeadlineExceeded {
		t.Fatalf("stop past its deadline: %v", err)
	}
	checkRunning(t, e.status(id))
}

// A script that answers ok false leaves the container to its arguments.
func TestScriptNotOKKeepsArguments(t *testing.T) {
	var calls atomic.Int32
	e := newScriptEnv(t, fakecri.Options{Script: func(*runtimeapi.PodSandboxConfig, *runtimeapi.ContainerConfig) (fakecri.ContainerScript, bool) {
		calls.Add(1)
		return fakecri.ContainerScript{Exit: true, ExitCode: 99}, false
	}})
	checkExit(t, e.status(e.run("job", "exit", "4")), 4, "Error", "")
	hang := e.run("hang", "hang")
	done := e.stop(e.ctx, hang, 10)
	e.waitWaiters(1)
	e.clk.Step(10 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	checkExit(t, e.status(hang), 137, "Error", "killed after the grace period")
	app := e.run("app")
	if err := <-e.stop(e.ctx, app, 10); err != nil {
		t.Fatal(err)
	}
	checkExit(t, e.status(app), 0, "Completed", "")
	if n := calls.Load(); n != 3 {
		t.Errorf("script called %d times, want once per start (3)", n)
	}
}

// Timed exits keep their time while the server is down, as processes
// outlive their runtime daemon.
func TestScriptTimedExitAcrossDownAndUp(t *testing.T) {
	e := newScriptEnv(t, fakecri.Options{Script: byName(map[string]fakecri.ContainerScript{
		"job": {Exit: true, ExitCode: 1, RunFor: 10 * time.Second},
	})})
	id := e.run("job")
	e.s.Down()
	e.clk.Step(10 * time.Second)
	if err := e.s.Up(); err != nil {
		t.Fatal(err)
	}
	var st *runtimeapi.ContainerStatus
	eventually(t, "the exit to show after Up", func() bool {
		r, err := e.c.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
		st = r.GetStatus()
		return err == nil && st.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED
	})
	checkExit(t, st, 1, "Error", "")
	if d := time.Duration(st.GetFinishedAt() - st.GetStartedAt()); d != 10*time.Second {
		t.Errorf("exited after %v, want 10s", d)
	}
}

// Stop drops pending timed exits: their timer stops and the scheduler
// goroutine ends, so no goroutine outlives the server and its client.
func TestScriptTimedExitsEndWithStop(t *testing.T) {
	before := goruntime.NumGoroutine()
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	s := fakecri.New(fakecri.Options{Clock: clk, Images: []string{"img"}, Script: byName(map[string]fakecri.ContainerScript{
		"a": {Exit: true, RunFor: time.Minute},
		"b": {Exit: true, RunFor: time.Hour},
	})})
	dir, err := os.MkdirTemp("", "fcri")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ep, err := s.StartUnix(filepath.Join(dir, "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(ep, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	e := &scriptEnv{t: t, s: s, c: client{runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)}, clk: clk, ctx: ctx(t)}
	sb, err := e.c.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("a")})
	if err != nil {
		t.Fatal(err)
	}
	e.sandboxID = sb.GetPodSandboxId()
	e.run("a")
	e.run("b")
	if n := clk.Waiters(); n != 1 {
		t.Fatalf("%d clock waiters for two timed exits, want the scheduler's one", n)
	}
	_ = conn.Close()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		s.Stop()
	}()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return: it waits for a scheduler that never ends")
	}
	if n := clk.Waiters(); n != 0 {
		t.Fatalf("%d clock waiters after Stop", n)
	}
	eventually(t, "goroutines to end", func() bool { return goruntime.NumGoroutine() <= before })
}

// PullScript delays a pull on the server's clock (the client's deadline
// cuts it short) or fails it with its error, without adding the image.
func TestPullScript(t *testing.T) {
	var mu sync.Mutex
	sandboxes := map[string]string{} // image → sandbox name the script saw
	e := newScriptEnv(t, fakecri.Options{PullScript: func(image string, sb *runtimeapi.PodSandboxConfig) (time.Duration, error) {
		mu.Lock()
		sandboxes[image] = sb.GetMetadata().GetName()
		mu.Unlock()
		switch image {
		case "slow":
			return 5 * time.Second, nil
		case "stuck":
			return time.Hour, nil
		case "flaky":
			return 2 * time.Second, status.Error(codes.Unavailable, "registry unavailable")
		case "limited":
			return 0, status.Error(codes.ResourceExhausted, "too many pulls")
		case "broken":
			return 0, errors.New("registry on fire")
		}
		return 0, nil
	}})
	pull := func(ctx context.Context, image string, sb *runtimeapi.PodSandboxConfig) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := e.c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: image}, SandboxConfig: sb})
			done <- err
		}()
		return done
	}

	// A delay, on the server's clock.
	done := pull(e.ctx, "slow", sandboxConfig("a"))
	e.waitWaiters(1)
	e.clk.Step(5*time.Second - time.Nanosecond)
	select {
	case err := <-done:
		t.Fatalf("pull returned before its delay: %v", err)
	default:
	}
	if e.s.HasImage("slow") {
		t.Fatal("image present before the pull ended")
	}
	e.clk.Step(time.Nanosecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !e.s.HasImage("slow") {
		t.Fatal("image absent after the pull")
	}

	// The client's deadline cuts the delay short.
	short, cancel := context.WithTimeout(e.ctx, 50*time.Millisecond)
	defer cancel()
	if err := <-pull(short, "stuck", nil); code(err) != codes.DeadlineExceeded {
		t.Fatalf("pull past its deadline: %v", err)
	}
	if e.s.HasImage("stuck") {
		t.Fatal("image of a pull cut short")
	}
	e.waitWaiters(0)

	// An error after a delay, and errors at once: a status error keeps
	// its code, any other error is Unknown.
	done = pull(e.ctx, "flaky", nil)
	e.waitWaiters(1)
	e.clk.Step(2 * time.Second)
	if err := <-done; code(err) != codes.Unavailable || status.Convert(err).Message() != "registry unavailable" {
		t.Fatalf("pull of flaky: %v", err)
	}
	for _, tc := range []struct {
		image, message string
		code           codes.Code
	}{
		{"limited", "too many pulls", codes.ResourceExhausted},
		{"broken", "registry on fire", codes.Unknown},
	} {
		if err := <-pull(e.ctx, tc.image, nil); code(err) != tc.code || status.Convert(err).Message() != tc.message {
			t.Fatalf("pull of %s: %v, want %s %q", tc.image, err, tc.code, tc.message)
		}
	}
	for _, image := range []string{"flaky", "limited", "broken"} {
		if e.s.HasImage(image) {
			t.Errorf("image of a failed pull: %s", image)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if sandboxes["slow"] != "p-a" || sandboxes["broken"] != "" {
		t.Errorf("sandbox configs the script saw: %v", sandboxes)
	}
}
