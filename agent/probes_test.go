package agent_test

import (
	"context"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime/fakecri"
	"github.com/podlife/podlife/runtime/prober"
)

// probedManifest is a pod whose container has an exec probe of the given
// kind ("readinessProbe", "livenessProbe") every second.
func probedManifest(name, kind string) string {
	return manifest(name, 1) + "    " + kind + ":\n      exec: {command: [check]}\n      periodSeconds: 1\n      failureThreshold: 1\n"
}

func podReady(st v1.PodStatus) bool {
	for _, c := range st.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// A readiness probe gates the container's and the pod's Ready; a failed
// liveness probe restarts the container.
func TestProbes(t *testing.T) {
	srv, endpoint := startFakeCRI(t, fakecri.Options{})
	var readyOK, liveOK atomic.Bool
	var livePod atomic.Value // the liveness pod's UID
	liveOK.Store(true)
	srv.SetExec(func(_ context.Context, req fakecri.ExecRequest) (fakecri.ExecResult, error) {
		ok := readyOK.Load()
		if uid, _ := livePod.Load().(string); uid != "" && req.PodUID == uid {
			ok = liveOK.Load()
		}
		if ok {
			return fakecri.ExecResult{}, nil
		}
		return fakecri.ExecResult{ExitCode: 1, Stdout: []byte("not yet")}, nil
	})
	dir := t.TempDir()
	writeManifest(t, dir, "ready.yaml", probedManifest("ready", "readinessProbe"))
	writeManifest(t, dir, "live.yaml", probedManifest("live", "livenessProbe"))
	rt := newRuntime(t, endpoint) // exec and container kills through the CRI
	ra := startAgentWith(t, endpoint, dir, func(o *agent.Options) { o.Runtime = rt })
	ready, live := ra.podUID(t, "ready"), ra.podUID(t, "live")
	livePod.Store(string(live))

	podworkertest.WaitFor(t, waitTimeout, "ready pod Running, not Ready", func() bool {
		st, ok := ra.StatusReporter().Status(ready)
		return ok && st.Phase == v1.PodRunning && len(st.ContainerStatuses) == 1 && !st.ContainerStatuses[0].Ready && !podReady(st)
	})
	readyOK.Store(true)
	podworkertest.WaitFor(t, waitTimeout, "Ready once the probe passes", func() bool {
		st, _ := ra.StatusReporter().Status(ready)
		return podReady(st) && st.ContainerStatuses[0].Ready
	})

	podworkertest.WaitFor(t, waitTimeout, "live pod Running", func() bool {
		st, ok := ra.StatusReporter().Status(live)
		return ok && st.Phase == v1.PodRunning
	})
	liveOK.Store(false)
	podworkertest.WaitFor(t, waitTimeout, "container restarted after its liveness probe failed", func() bool {
		st, _ := ra.StatusReporter().Status(live)
		return len(st.ContainerStatuses) == 1 && st.ContainerStatuses[0].RestartCount >= 1
	})
	liveOK.Store(true)
	podworkertest.WaitFor(t, waitTimeout, "restarted container running", func() bool {
		st, _ := ra.StatusReporter().Status(live)
		return len(st.ContainerStatuses) == 1 && st.ContainerStatuses[0].State.Running != nil
	})
}

// Options.Probe answers the probes of every kind instead of the prober's
// handlers: an httpGet readiness probe, which would fail on fakecri (its pod
// IP leads nowhere), gates Ready on the hook's answer alone.
func TestProbeHookAnswersHTTPProbes(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	var readyOK atomic.Bool
	var asked atomic.Int64
	dir := t.TempDir()
	writeManifest(t, dir, "web.yaml", manifest("web", 1)+
		"    readinessProbe:\n      httpGet: {path: /healthz, port: 8080}\n      periodSeconds: 1\n      failureThreshold: 1\n")
	ra := startAgentWith(t, endpoint, dir, func(o *agent.Options) {
		o.Probe = func(_ context.Context, req prober.Request) (prober.Result, string) {
			if req.Type != prober.Readiness || req.Probe.HTTPGet == nil || req.Probe.HTTPGet.Path != "/healthz" {
				t.Errorf("probe request %+v", req)
			}
			asked.Add(1)
			if readyOK.Load() {
				return prober.Success, ""
			}
			return prober.Failure, "scripted: not ready"
		}
	})
	web := ra.podUID(t, "web")
	podworkertest.WaitFor(t, waitTimeout, "web Running and probed, not Ready", func() bool {
		st, ok := ra.StatusReporter().Status(web)
		return ok && st.Phase == v1.PodRunning && asked.Load() > 0 && !podReady(st)
	})
	readyOK.Store(true)
	podworkertest.WaitFor(t, waitTimeout, "Ready once the hook says so", func() bool {
		st, _ := ra.StatusReporter().Status(web)
		return podReady(st)
	})
}
