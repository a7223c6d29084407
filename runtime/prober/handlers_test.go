package prober_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	testclock "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
	"github.com/podlife/podlife/runtime/prober"
)

// probeOnce runs handler once as the startup probe of container c (with
// failureThreshold 1, so that its first outcome is published) of a pod at
// podIP, and returns the Update.
func probeOnce(t *testing.T, c v1.Container, handler v1.ProbeHandler, podIP string, mutate ...func(*prober.Options)) prober.Update {
	t.Helper()
	return probeOnceIn(t, "id1", c, handler, podIP, mutate...)
}

// probeOnceIn is probeOnce in the container instance id.
func probeOnceIn(t *testing.T, id string, c v1.Container, handler v1.ProbeHandler, podIP string, mutate ...func(*prober.Options)) prober.Update {
	t.Helper()
	updates := make(chan prober.Update, 1)
	o := prober.Options{
		Clock:    testclock.NewFakeClock(t0),
		Rand:     func() float64 { return 0 },
		Logger:   testr.New(t),
		OnResult: func(u prober.Update) { updates <- u },
	}
	for _, f := range mutate {
		f(&o)
	}
	m, err := prober.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	c.Name = "c"
	c.StartupProbe = &v1.Probe{ProbeHandler: handler, FailureThreshold: 1, TimeoutSeconds: 1}
	m.SetContainers(podWith("h", c), podIP, running(id, t0))
	select {
	case u := <-updates:
		return u
	case <-time.After(20 * time.Second):
		t.Fatal("no probe result")
	}
	return prober.Update{}
}

func splitHostPort(t *testing.T, rawURL string) (string, int) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	return u.Hostname(), port
}

func TestHTTPGet(t *testing.T) {
	var mu sync.Mutex
	var seen []*http.Request
	release := make(chan struct{})
	defer close(release)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r)
		mu.Unlock()
	}))
	defer other.Close()
	_, otherPort := splitHostPort(t, other.URL)
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r)
		mu.Unlock()
		_, _ = io.WriteString(w, "fine")
	})
	mux.HandleFunc("/404", http.NotFound)
	mux.HandleFunc("/500", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "broken", 500) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(503)
		_, _ = io.WriteString(w, strings.Repeat("x", 100<<10))
	})
	mux.HandleFunc("/here", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("http://localhost:%d/elsewhere", otherPort), http.StatusFound)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tlsSrv := httptest.NewTLSServer(mux)
	defer tlsSrv.Close()
	host, port := splitHostPort(t, srv.URL)
	_, tlsPort := splitHostPort(t, tlsSrv.URL)

	get := func(path string) *v1.HTTPGetAction {
		return &v1.HTTPGetAction{Path: path, Port: intstr.FromInt32(int32(port))}
	}
	for _, tc := range []struct {
		name      string
		action    *v1.HTTPGetAction
		ports     []v1.ContainerPort
		podIP     string
		want      prober.Result
		outputHas string
		check     func(t *testing.T, r *http.Request)
	}{
		{name: "200 on the pod IP", action: get("/ok"), podIP: host, want: prober.Success, outputHas: "fine",
			check: func(t *testing.T, r *http.Request) {
				if ua := r.Header.Get("User-Agent"); ua != "kube-probe/1.37" {
					t.Errorf("User-Agent %q", ua)
				}
				if a := r.Header.Get("Accept"); a != "*/*" {
					t.Errorf("Accept %q", a)
				}
			}},
		{name: "404", action: get("/404"), podIP: host, want: prober.Failure, outputHas: "404"},
		{name: "500", action: get("/500"), podIP: host, want: prober.Failure, outputHas: "broken"},
		{name: "body limited to 10 KiB", action: get("/big"), podIP: host, want: prober.Failure},
		{name: "host field, named port, headers, query", podIP: "192.0.2.1", want: prober.Success,
			action: &v1.HTTPGetAction{Host: host, Path: "ok?x=1", Port: intstr.FromString("web"), HTTPHeaders: []v1.HTTPHeader{
				{Name: "X-Probe", Value: "yes"}, {Name: "host", Value: "example.com"}, {Name: "User-Agent", Value: "mine"}}},
			ports: []v1.ContainerPort{{Name: "web", ContainerPort: int32(port)}},
			check: func(t *testing.T, r *http.Request) {
				if r.Header.Get("X-Probe") != "yes" || r.Host != "example.com" || r.UserAgent() != "mine" || r.URL.RawQuery != "x=1" {
					t.Errorf("request: headers %v, host %q, query %q", r.Header, r.Host, r.URL.RawQuery)
				}
			}},
		{name: "redirect to the same host followed", action: get("/here"), podIP: host, want: prober.Success, outputHas: "fine"},
		{name: "redirect to another host not followed", action: get("/away"), podIP: host, want: prober.Success, outputHas: "redirect"},
		{name: "https without verification", podIP: host, want: prober.Success, outputHas: "fine",
			action: &v1.HTTPGetAction{Path: "/ok", Port: intstr.FromInt32(int32(tlsPort)), Scheme: v1.URISchemeHTTPS}},
		{name: "timeout", action: get("/slow"), podIP: host, want: prober.Failure, outputHas: "timeout"},
		{name: "connection refused", action: &v1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(int32(closedPort(t)))}, podIP: "127.0.0.1", want: prober.Failure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			u := probeOnce(t, v1.Container{Ports: tc.ports}, v1.ProbeHandler{HTTPGet: tc.action}, tc.podIP)
			if u.Result != tc.want || !strings.Contains(u.Output, tc.outputHas) || len(u.Output) > 10<<10+200 {
				t.Fatalf("result %v, output %.200q (%d bytes); want %v with %q", u.Result, u.Output, len(u.Output), tc.want, tc.outputHas)
			}
			mu.Lock()
			defer mu.Unlock()
			if strings.Contains(tc.name, "another host") && len(seen) != 0 {
				t.Fatalf("the other host was asked: %v", seen[0].URL)
			}
			if tc.check != nil {
				if len(seen) != 1 {
					t.Fatalf("%d requests seen", len(seen))
				}
				tc.check(t, seen[0])
			}
		})
	}
}

// closedPort returns a local port nothing listens on.
func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port
}

func TestTCPSocket(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	if u := probeOnce(t, v1.Container{}, v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}}, "127.0.0.1"); u.Result != prober.Success {
		t.Fatalf("open port: %+v", u)
	}
	c := v1.Container{Ports: []v1.ContainerPort{{Name: "p", ContainerPort: int32(port)}}}
	if u := probeOnce(t, c, v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Host: "127.0.0.1", Port: intstr.FromString("p")}}, "192.0.2.1"); u.Result != prober.Success {
		t.Fatalf("host and named port: %+v", u)
	}
	if u := probeOnce(t, v1.Container{}, v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(int32(closedPort(t)))}}, "127.0.0.1"); u.Result != prober.Failure {
		t.Fatalf("closed port: %+v", u)
	}
}

func TestGRPC(t *testing.T) {
	serve := func(withHealth bool) int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := grpc.NewServer()
		if withHealth {
			hs := health.NewServer()
			hs.SetServingStatus("db", healthpb.HealthCheckResponse_SERVING)
			hs.SetServingStatus("cache", healthpb.HealthCheckResponse_NOT_SERVING)
			healthpb.RegisterHealthServer(s, hs)
		}
		go func() { _ = s.Serve(l) }()
		t.Cleanup(s.Stop)
		return l.Addr().(*net.TCPAddr).Port
	}
	port, bare := serve(true), serve(false)
	for _, tc := range []struct {
		name      string
		port      int
		service   *string
		want      prober.Result
		outputHas string
	}{
		{"overall", port, nil, prober.Success, "SERVING"},
		{"serving service", port, new("db"), prober.Success, "SERVING"},
		{"not serving", port, new("cache"), prober.Failure, "NOT_SERVING"},
		{"unknown service", port, new("nope"), prober.Failure, "NotFound"},
		{"no health service", bare, nil, prober.Failure, "does not implement"},
		{"nothing listening", closedPort(t), nil, prober.Failure, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := probeOnce(t, v1.Container{}, v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: int32(tc.port), Service: tc.service}}, "127.0.0.1")
			if u.Result != tc.want || !strings.Contains(u.Output, tc.outputHas) {
				t.Fatalf("result %v, output %q; want %v with %q", u.Result, u.Output, tc.want, tc.outputHas)
			}
		})
	}
}

// TestExecThroughCRI runs exec probes through runtime/cri's ExecSync against
// the fake CRI server, whose containers answer the pause image's words.
func TestExecThroughCRI(t *testing.T) {
	dir, err := os.MkdirTemp("", "prober")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	srv := fakecri.New(fakecri.Options{})
	ep, err := srv.StartUnix(filepath.Join(dir, "cri.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	rt, err := cri.New(cri.Options{Endpoint: ep, Logger: testr.New(t), VolumeRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	pod := podWith("x", v1.Container{Name: "c", Image: "localhost/podlife/pause:1.0"})
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatal(err)
	}
	st, err := rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	id := st.FindContainerStatusByName("c").ID.ID
	for _, tc := range []struct {
		cmd       []string
		want      prober.Result
		outputHas string
	}{
		{[]string{"echo", "healthy"}, prober.Success, "healthy"},
		{[]string{"exit", "1"}, prober.Failure, "exited with 1"},
		{[]string{"hang"}, prober.Failure, "timed out"},
	} {
		t.Run(tc.cmd[0], func(t *testing.T) {
			updates := make(chan prober.Update, 1)
			m, err := prober.New(prober.Options{Exec: rt, Clock: testclock.NewFakeClock(t0), Rand: func() float64 { return 0 },
				OnResult: func(u prober.Update) { updates <- u }})
			if err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithCancel(ctx)
			done := make(chan error)
			go func() { done <- m.Run(rctx) }()
			defer func() { cancel(); <-done }()
			c := v1.Container{Name: "c", StartupProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: tc.cmd}}, FailureThreshold: 1}}
			m.SetContainers(podWith("x", c), "", running(id, t0))
			select {
			case u := <-updates:
				if u.Result != tc.want || !strings.Contains(u.Output, tc.outputHas) {
					t.Fatalf("result %v, output %q; want %v with %q", u.Result, u.Output, tc.want, tc.outputHas)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("no result")
			}
		})
	}
}

// TestDialerInjected: every network probe dials through Options.Dialer.
func TestDialerInjected(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	var dialed []string
	var mu sync.Mutex
	toServer := func(o *prober.Options) {
		o.Dialer = func(ctx context.Context, network, address string) (net.Conn, error) {
			mu.Lock()
			dialed = append(dialed, address)
			mu.Unlock()
			var d net.Dialer
			return d.DialContext(ctx, network, srv.Listener.Addr().String())
		}
	}
	for _, h := range []v1.ProbeHandler{
		{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(1)}},
		{HTTPGet: &v1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(2)}},
	} {
		if u := probeOnce(t, v1.Container{}, h, "192.0.2.7", toServer); u.Result != prober.Success {
			t.Fatalf("%+v: %+v", h, u)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(dialed, ",") != "192.0.2.7:1,192.0.2.7:2" {
		t.Fatalf("dialed %v", dialed)
	}
}

// An HTTP probe redirected to another host succeeds with a warning, as the
// kubelet's probe.Warning: OnWarning hears the kubelet's message, with the
// response's body (the e2e specs "should *not* be restarted with a
// non-local redirect http liveness probe" wait for the ProbeWarning event
// the agent records from it).
func TestHTTPRedirectElsewhereWarns(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://0.0.0.0/", http.StatusFound)
	}))
	defer srv.Close()
	host, port := splitHostPort(t, srv.URL)
	warnings := make(chan prober.Update, 10)
	u := probeOnce(t, v1.Container{}, v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(int32(port))}}, host,
		func(o *prober.Options) { o.OnWarning = func(u prober.Update) { warnings <- u } })
	if u.Result != prober.Success {
		t.Fatalf("result %v, want Success", u.Result)
	}
	select {
	case w := <-warnings:
		const want = `Probe terminated redirects, Response body: <a href="http://0.0.0.0/">Found</a>.`
		if !strings.Contains(w.Output, want) || w.Probe != prober.Startup || w.ContainerName != "c" || w.Result != prober.Success {
			t.Fatalf("warning %+v, want %q from the startup probe of c", w, want)
		}
	default:
		t.Fatal("no warning")
	}
}

// Options.Probe runs every kind of probe instead of the built-in handlers:
// it gets the container, its instance and start, the normalized probe and a
// context that ends at the probe's timeout, and its answer is the outcome.
// No handler dials or execs (a Dialer that fails the test proves it).
func TestProbeHookReplacesEveryHandler(t *testing.T) {
	handlers := map[string]v1.ProbeHandler{
		"exec": {Exec: &v1.ExecAction{Command: []string{"true"}}},
		"http": {HTTPGet: &v1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80)}},
		"tcp":  {TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(80)}},
		"grpc": {GRPC: &v1.GRPCAction{Port: 80}},
	}
	for kind, handler := range handlers {
		t.Run(kind, func(t *testing.T) {
			var got prober.Request
			var deadline time.Duration
			u := probeOnce(t, v1.Container{}, handler, "192.0.2.9", func(o *prober.Options) {
				o.Dialer = func(context.Context, string, string) (net.Conn, error) {
					t.Error("the built-in handler dialed")
					return nil, errors.New("no network")
				}
				o.Exec = prober.ExecFunc(func(context.Context, string, []string, time.Duration) ([]byte, []byte, int32, error) {
					t.Error("the built-in handler ran exec")
					return nil, nil, 0, errors.New("no exec")
				})
				o.Probe = func(ctx context.Context, req prober.Request) (prober.Result, string) {
					got = req
					if d, ok := ctx.Deadline(); ok {
						deadline = time.Until(d)
					}
					return prober.Failure, "scripted " + kind
				}
			})
			if u.Result != prober.Failure || u.Output != "scripted "+kind {
				t.Fatalf("update %+v, want the hook's Failure and output", u)
			}
			if got.PodUID != "uid-h" || got.PodName != "h" || got.PodNamespace != "ns" || got.Container.Name != "c" ||
				got.ContainerID != "id1" || !got.StartedAt.Equal(t0) || got.Type != prober.Startup ||
				got.PodIP != "192.0.2.9" || got.Timeout != time.Second || got.Probe.PeriodSeconds != prober.DefaultPeriodSeconds {
				t.Fatalf("request %+v", got)
			}
			if deadline <= 0 || deadline > time.Second {
				t.Fatalf("the hook's context ends in %v, want within the probe's 1 s timeout", deadline)
			}
		})
	}
}
