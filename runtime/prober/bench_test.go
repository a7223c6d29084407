package prober_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
	"github.com/podlife/podlife/runtime/prober"
)

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchProbes runs pods pods, each with a liveness and a readiness probe
// every second, for a warm-up and then a measured window of real time, and
// reports the process's CPU over the window as a fraction of one core.
// probes counts the probes answered.
func benchProbes(b *testing.B, pods int, opts prober.Options, probe func(name string) v1.ProbeHandler, podIP string, probes *atomic.Int64) {
	const warmUp, window = 2 * time.Second, 5 * time.Second
	opts.Registerer = prometheus.NewRegistry() // as in an agent: metrics on
	m, err := prober.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	for i := range pods {
		name := "p" + strconv.Itoa(i)
		pod := podWith(name, v1.Container{
			Name:           "c",
			LivenessProbe:  &v1.Probe{ProbeHandler: probe("live"), PeriodSeconds: 1},
			ReadinessProbe: &v1.Probe{ProbeHandler: probe("ready"), PeriodSeconds: 1},
		})
		pod.UID = types.UID(name)
		m.SetContainers(pod, podIP, running("id-"+name, time.Now()))
	}
	time.Sleep(warmUp) // the first probes are spread over a period; then steady
	startProbes, startCPU, start := probes.Load(), cpuTime(b), time.Now()
	for b.Loop() {
		time.Sleep(window)
	}
	wall, cpu := time.Since(start), cpuTime(b)-startCPU
	n := probes.Load() - startProbes
	cancel()
	<-done
	b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cores")
	b.ReportMetric(float64(n)/wall.Seconds(), "probes/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkProbes is the measure: 1,000 pods with an exec liveness
// and an exec readiness probe every second, on a fake runtime that answers
// at once, 2,000 probes/s. Run with -benchtime=1x.
func BenchmarkProbes(b *testing.B) {
	var probes atomic.Int64
	noop := prober.ExecFunc(func(context.Context, string, []string, time.Duration) ([]byte, []byte, int32, error) {
		probes.Add(1)
		return nil, nil, 0, nil
	})
	benchProbes(b, 1000, prober.Options{Exec: noop}, func(name string) v1.ProbeHandler {
		return v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{name}}}
	}, "", &probes)
}

// BenchmarkProbesHTTP is the same with httpGet probes on an in-process HTTP
// server (its CPU counts too), a new connection per probe as the kubelet's.
func BenchmarkProbesHTTP(b *testing.B) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	benchProbes(b, 1000, prober.Options{}, func(name string) v1.ProbeHandler {
		return v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/" + name, Port: intstr.FromInt(p)}}
	}, "127.0.0.1", &served)
}

// BenchmarkProbesCRI is BenchmarkProbes through runtime/cri's ExecSync to a
// fakecri server over a unix socket, in the same process: the figure adds
// the CRI round trip on both sides (client and fake server).
func BenchmarkProbesCRI(b *testing.B) {
	dir, err := os.MkdirTemp("", "prober")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	srv := fakecri.New(fakecri.Options{})
	ep, err := srv.StartUnix(filepath.Join(dir, "cri.sock"))
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	var probes atomic.Int64
	srv.SetExec(func(context.Context, fakecri.ExecRequest) (fakecri.ExecResult, error) {
		probes.Add(1)
		return fakecri.ExecResult{}, nil
	})
	rt, err := cri.New(cri.Options{Endpoint: ep, VolumeRoot: filepath.Join(dir, "volumes")})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	// One running container for every pod's probes.
	pod := podWith("target", v1.Container{Name: "c", Image: "localhost/podlife/pause:1.0"})
	if err := rt.SyncPod(context.Background(), pod, nil); err != nil {
		b.Fatal(err)
	}
	st, err := rt.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		b.Fatal(err)
	}
	id := st.FindContainerStatusByName("c").ID.ID
	exec := prober.ExecFunc(func(ctx context.Context, _ string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
		return rt.ExecSync(ctx, id, cmd, timeout)
	})
	benchProbes(b, 1000, prober.Options{Exec: exec}, func(name string) v1.ProbeHandler {
		return v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{name}}}
	}, "", &probes)
}
