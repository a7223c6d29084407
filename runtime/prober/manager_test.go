package prober_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/prober"
)

func TestReadinessDelayPeriodThresholds(t *testing.T) {
	h := newHarness(t)
	pod := podWith("r", v1.Container{Name: "c", ReadinessProbe: execProbe("ready", func(p *v1.Probe) {
		p.InitialDelaySeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold = 5, 10, 2, 3
	})})
	h.m.SetContainers(pod, "10.0.0.1", running("id1", t0))
	if ready, known := h.m.Readiness(pod.UID, "c"); ready || !known {
		t.Fatalf("before any probe: Readiness = %v, %v; want false, true", ready, known)
	}
	h.stepTo(t0.Add(sec(4)))
	h.stepTo(t0.Add(sec(5))) // initialDelaySeconds from StartedAt
	c := h.call("ready", t0.Add(sec(5)))
	if c.containerID != "id1" || c.timeout != time.Second {
		t.Fatalf("call %+v: want container id1 and the default timeout 1s", c)
	}
	c.reply <- execReply{}
	h.stepTo(t0.Add(sec(14)))
	h.stepTo(t0.Add(sec(15))) // periodSeconds
	c = h.call("ready", t0.Add(sec(15)))
	if ready, _ := h.m.Readiness(pod.UID, "c"); ready {
		t.Fatal("ready after one success; successThreshold is 2")
	}
	h.noUpdate()
	c.reply <- execReply{}
	u := h.update()
	if u.Probe != prober.Readiness || u.Result != prober.Success || u.ContainerID != "id1" || u.ContainerName != "c" || u.PodUID != pod.UID {
		t.Fatalf("update %+v", u)
	}
	eventually(t, "ready", func() bool { r, _ := h.m.Readiness(pod.UID, "c"); return r })

	h.stepTo(t0.Add(sec(25)))
	h.probe("ready", t0.Add(sec(25)), 1)
	h.stepTo(t0.Add(sec(35)))
	h.probe("ready", t0.Add(sec(35)), 1)
	h.stepTo(t0.Add(sec(45)))
	c = h.call("ready", t0.Add(sec(45)))
	if r, _ := h.m.Readiness(pod.UID, "c"); !r {
		t.Fatal("not ready after 2 failures; failureThreshold is 3")
	}
	h.noUpdate()
	c.reply <- execReply{code: 1}
	u = h.update()
	if u.Probe != prober.Readiness || u.Result != prober.Failure {
		t.Fatalf("after 3 failures: update %+v", u)
	}
	eventually(t, "not ready", func() bool { r, _ := h.m.Readiness(pod.UID, "c"); return !r })
}

func TestLivenessFailureHoldsUntilNewInstance(t *testing.T) {
	h := newHarness(t)
	pod := podWith("l", v1.Container{Name: "c", LivenessProbe: execProbe("live", func(p *v1.Probe) {
		p.PeriodSeconds, p.FailureThreshold, p.TimeoutSeconds = 2, 2, 7
		p.TerminationGracePeriodSeconds = new(int64(9))
	})})
	h.m.SetContainers(pod, "", running("id1", t0))
	if got := h.m.Liveness(pod.UID, "c"); got != prober.Success {
		t.Fatalf("Liveness before a probe = %v, want Success", got)
	}
	if c := h.probe("live", t0, 1); c.timeout != 7*time.Second {
		t.Fatalf("timeout %v, want timeoutSeconds 7", c.timeout)
	}
	h.stepTo(t0.Add(sec(2)))
	c := h.call("live", t0.Add(sec(2)))
	h.noUpdate()
	c.reply <- execReply{code: 1}
	u := h.update()
	if u.Probe != prober.Liveness || u.Result != prober.Failure || u.ContainerID != "id1" ||
		u.TerminationGracePeriodSeconds == nil || *u.TerminationGracePeriodSeconds != 9 || u.Output == "" {
		t.Fatalf("update %+v", u)
	}
	if got := h.m.Liveness(pod.UID, "c"); got != prober.Failure {
		t.Fatalf("Liveness = %v, want Failure", got)
	}
	if un := h.m.Unhealthy(pod.UID); len(un) != 1 || un[0].ContainerID != "id1" || un[0].Probe != prober.Liveness || *un[0].TerminationGracePeriodSeconds != 9 {
		t.Fatalf("Unhealthy = %+v", un)
	}
	// On hold: no probe of id1 any more, however long it takes to kill it.
	h.stepTo(t0.Add(sec(10)))
	h.stepTo(t0.Add(sec(20)))
	// The restarted instance is probed from its start, alive until shown
	// otherwise.
	h.m.SetContainers(pod, "", running("id2", t0.Add(sec(20))))
	if got := h.m.Liveness(pod.UID, "c"); got != prober.Success {
		t.Fatalf("Liveness of the new instance = %v, want Success", got)
	}
	if un := h.m.Unhealthy(pod.UID); len(un) != 0 {
		t.Fatalf("Unhealthy after a new instance = %+v", un)
	}
	if c := h.probe("live", t0.Add(sec(20)), 0); c.containerID != "id2" {
		t.Fatalf("probe of %q, want id2", c.containerID)
	}
	h.stepTo(t0.Add(sec(22)))
	h.call("live", t0.Add(sec(22)))
	h.noUpdate()
}

func TestStartupGatesLivenessAndReadiness(t *testing.T) {
	pod := func() *v1.Pod {
		return podWith("s", v1.Container{
			Name:           "c",
			StartupProbe:   execProbe("start", func(p *v1.Probe) { p.PeriodSeconds, p.FailureThreshold = 1, 3 }),
			LivenessProbe:  execProbe("live", func(p *v1.Probe) { p.PeriodSeconds = 10 }),
			ReadinessProbe: execProbe("ready", func(p *v1.Probe) { p.PeriodSeconds, p.InitialDelaySeconds = 10, 1 }),
		})
	}
	t.Run("success", func(t *testing.T) {
		h := newHarness(t)
		pod := pod()
		h.m.SetContainers(pod, "", running("id1", t0))
		h.probe("start", t0, 1)
		h.stepTo(t0.Add(sec(1)))
		c := h.call("start", t0.Add(sec(1)))
		if h.m.Started(pod.UID, "c") {
			t.Fatal("started before the startup probe passed")
		}
		if h.exec.count("live")+h.exec.count("ready") != 0 {
			t.Fatal("liveness or readiness probed before startup passed")
		}
		c.reply <- execReply{}
		if u := h.update(); u.Probe != prober.Startup || u.Result != prober.Success {
			t.Fatalf("update %+v", u)
		}
		// Their initial delays are over: both run at once.
		h.probe("live", t0.Add(sec(1)), 0)
		h.probe("ready", t0.Add(sec(1)), 0)
		if u := h.update(); u.Probe != prober.Readiness || u.Result != prober.Success {
			t.Fatalf("update %+v", u)
		}
		if !h.m.Started(pod.UID, "c") {
			t.Fatal("not started after the startup probe passed")
		}
		h.stepTo(t0.Add(sec(11)))
		h.probe("live", t0.Add(sec(11)), 0)
		h.probe("ready", t0.Add(sec(11)), 0)
		if n := h.exec.count("start"); n != 2 {
			t.Fatalf("%d startup probes, want 2 (none after it passed)", n)
		}
		// A new instance starts over: not started, not ready, startup first.
		h.m.SetContainers(pod, "", running("id2", t0.Add(sec(11))))
		if h.m.Started(pod.UID, "c") {
			t.Fatal("new instance started before its startup probe")
		}
		if r, _ := h.m.Readiness(pod.UID, "c"); r {
			t.Fatal("new instance ready before any probe")
		}
		h.probe("start", t0.Add(sec(11)), 0)
		h.update()
	})
	t.Run("failure", func(t *testing.T) {
		h := newHarness(t)
		pod := pod()
		h.m.SetContainers(pod, "", running("id1", t0))
		for i := range 3 {
			h.stepTo(t0.Add(sec(i)))
			h.probe("start", t0.Add(sec(i)), 1)
		}
		u := h.update()
		if u.Probe != prober.Startup || u.Result != prober.Failure {
			t.Fatalf("update %+v", u)
		}
		if r := h.m.Result(pod.UID, "c", prober.Startup); r != prober.Failure {
			t.Fatalf("Result(Startup) = %v, want Failure until a new instance", r)
		}
		if un := h.m.Unhealthy(pod.UID); len(un) != 1 || un[0].Probe != prober.Startup || un[0].TerminationGracePeriodSeconds != nil {
			t.Fatalf("Unhealthy = %+v", un)
		}
		h.stepTo(t0.Add(sec(30)))
		h.m.SetContainers(pod, "", running("id2", t0.Add(sec(30))))
		h.probe("start", t0.Add(sec(30)), 0)
		h.update()
		h.probe("live", t0.Add(sec(30)), 0)
		if n := h.exec.count("live") + h.exec.count("ready"); n > 2 {
			t.Fatalf("%d liveness/readiness probes; the failed instance had none", n)
		}
	})
}

func TestTimeoutFailsAndRuntimeErrorIsUnknown(t *testing.T) {
	h := newHarness(t)
	pod := podWith("e", v1.Container{Name: "c", LivenessProbe: execProbe("live", func(p *v1.Probe) {
		p.PeriodSeconds, p.FailureThreshold = 1, 2
	})})
	h.m.SetContainers(pod, "", running("id1", t0))
	h.call("live", t0).reply <- execReply{err: fmt.Errorf("exec: %w", runtime.ErrDeadlineExceeded)}
	h.stepTo(t0.Add(sec(1)))
	// An error of the runtime says nothing about the container: it neither
	// counts nor breaks the run of failures.
	h.call("live", t0.Add(sec(1))).reply <- execReply{err: fmt.Errorf("exec: %w", runtime.ErrUnavailable)}
	h.stepTo(t0.Add(sec(2)))
	c := h.call("live", t0.Add(sec(2)))
	h.noUpdate()
	c.reply <- execReply{err: context.DeadlineExceeded}
	if u := h.update(); u.Result != prober.Failure || u.Output == "" {
		t.Fatalf("update %+v", u)
	}
}

func TestNotRunningContainerIsNotProbed(t *testing.T) {
	h := newHarness(t)
	pod := podWith("n", v1.Container{Name: "c", ReadinessProbe: execProbe("ready", nil)}, v1.Container{Name: "plain"})
	h.m.SetContainers(pod, "", nil)
	h.stepTo(t0.Add(time.Minute))
	if r, known := h.m.Readiness(pod.UID, "c"); r || !known {
		t.Fatalf("Readiness = %v, %v; want false, true", r, known)
	}
	if _, known := h.m.Readiness(pod.UID, "plain"); known {
		t.Fatal("readiness known for a container without a probe")
	}
	// It starts: probed from then on (its start was before: no delay left).
	h.m.SetContainers(pod, "", running("id1", t0.Add(sec(30))))
	h.probe("ready", t0.Add(time.Minute), 0)
	h.update()
	// It stops: not ready at once, and no more probes.
	h.m.SetContainers(pod, "", nil)
	if r, _ := h.m.Readiness(pod.UID, "c"); r {
		t.Fatal("ready while not running")
	}
	h.stepTo(t0.Add(2 * time.Minute))
	h.m.SetContainers(pod, "", running("id2", t0.Add(2*time.Minute)))
	if c := h.call("ready", t0.Add(2*time.Minute)); c.containerID != "id2" {
		t.Fatalf("probe of %s, want id2", c.containerID)
	}
	if n := h.exec.count("ready"); n != 2 {
		t.Fatalf("%d probes, want 2", n)
	}
}

func TestRemovePodStopsProbes(t *testing.T) {
	h := newHarness(t)
	pod := podWith("rm", v1.Container{Name: "c", LivenessProbe: execProbe("live", nil), ReadinessProbe: execProbe("ready", nil)})
	h.m.SetContainers(pod, "", running("id1", t0))
	h.probe("ready", t0, 0)
	c := h.call("live", t0) // in flight
	eventually(t, "ready", func() bool { r, _ := h.m.Readiness(pod.UID, "c"); return r })
	h.m.RemovePod(pod.UID)
	if r, known := h.m.Readiness(pod.UID, "c"); r || known {
		t.Fatalf("after RemovePod: Readiness = %v, %v", r, known)
	}
	c.reply <- execReply{code: 1}
	h.stepTo(t0.Add(time.Hour))
	// Another pod's probes still run; the removed pod's do not.
	other := podWith("other", v1.Container{Name: "c", LivenessProbe: execProbe("other", nil)})
	h.m.SetContainers(other, "", running("id9", t0.Add(time.Hour)))
	h.probe("other", t0.Add(time.Hour), 0)
	if n := h.exec.count("live") + h.exec.count("ready"); n != 2 {
		t.Fatalf("%d probes of the removed pod, want 2", n)
	}
	<-h.updates // the readiness success
	h.noUpdate()
}

func TestStopLivenessAndStartupKeepsReadiness(t *testing.T) {
	h := newHarness(t)
	pod := podWith("term", v1.Container{Name: "c", LivenessProbe: execProbe("live", nil), ReadinessProbe: execProbe("ready", nil)})
	h.m.SetContainers(pod, "", running("id1", t0))
	h.probe("live", t0, 0)
	h.probe("ready", t0, 0)
	h.m.StopLivenessAndStartup(pod.UID)
	for i := 1; i <= 3; i++ {
		h.stepTo(t0.Add(sec(10 * i)))
		h.probe("ready", t0.Add(sec(10*i)), 0)
	}
	if n := h.exec.count("live"); n != 1 {
		t.Fatalf("%d liveness probes, want 1 (none once stopped)", n)
	}
}

func TestJitterSpreadsFirstProbesAfterStart(t *testing.T) {
	h := newHarness(t, func(o *prober.Options) { o.Rand = func() float64 { return 0.5 } })
	pod := podWith("j", v1.Container{Name: "c", ReadinessProbe: execProbe("ready", func(p *v1.Probe) { p.InitialDelaySeconds = 2 })})
	// A container that was already running when the manager started.
	h.m.SetContainers(pod, "", running("id1", t0.Add(-time.Hour)))
	h.stepTo(t0.Add(sec(5))) // half a period of 10 s
	h.probe("ready", t0.Add(sec(5)), 0)
	h.update()
	// Once the manager has run a period, a new instance gets no jitter.
	h.stepTo(t0.Add(sec(60)))
	h.m.SetContainers(pod, "", running("id2", t0.Add(sec(60))))
	h.stepTo(t0.Add(sec(62))) // initialDelaySeconds
	h.probe("ready", t0.Add(sec(62)), 0)
}

func TestDefaults(t *testing.T) {
	h := newHarness(t)
	// A probe straight from a manifest file, not defaulted by an API server:
	// period 10 s, timeout 1 s, failureThreshold 3.
	pod := podWith("d", v1.Container{Name: "c", LivenessProbe: execProbe("live", nil)})
	h.m.SetContainers(pod, "", running("id1", t0))
	for i := range 3 {
		h.stepTo(t0.Add(sec(10 * i)))
		c := h.call("live", t0.Add(sec(10*i)))
		if c.timeout != time.Second {
			t.Fatalf("timeout %v", c.timeout)
		}
		if i < 2 {
			c.reply <- execReply{code: 1}
			continue
		}
		h.noUpdate()
		c.reply <- execReply{code: 1}
	}
	if u := h.update(); u.Result != prober.Failure || u.TerminationGracePeriodSeconds != nil {
		t.Fatalf("update %+v", u)
	}
}

func TestRunTwice(t *testing.T) {
	m, err := prober.New(prober.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(ctx); err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("second Run = %v, want an error", err)
	}
}

func TestInitialDelayFromFirstSightWithoutStartTime(t *testing.T) {
	h := newHarness(t)
	pod := podWith("fs", v1.Container{Name: "c", ReadinessProbe: execProbe("ready", func(p *v1.Probe) { p.InitialDelaySeconds = 3 })})
	h.stepTo(t0.Add(time.Minute)) // past the jitter window: none anyway (Rand 0)
	h.m.SetContainers(pod, "", running("id1", time.Time{}))
	h.stepTo(t0.Add(time.Minute + sec(3)))
	h.probe("ready", t0.Add(time.Minute+sec(3)), 0)
}
