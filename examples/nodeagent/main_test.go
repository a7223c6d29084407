package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/podworker/podworkertest"
)

func TestFlags(t *testing.T) {
	if _, err := parseFlags([]string{"--demo", "--kubeconfig", "/x"}, io.Discard); err == nil {
		t.Error("--demo with --kubeconfig: no error")
	}
	if _, err := parseFlags([]string{"--demo", "--cri-endpoint", "unix:///x.sock"}, io.Discard); err == nil {
		t.Error("--demo with --cri-endpoint: no error")
	}
	c, err := parseFlags(nil, io.Discard)
	if err != nil || c.listen != "127.0.0.1:10255" || c.manifests != "examples/nodeagent/manifests" ||
		c.eventQPS != 50 || c.eventBurst != 100 {
		t.Errorf("defaults: %+v, %v", c, err)
	}
	if c.containerLogMaxSize != 10<<20 || c.containerLogMaxFiles != 5 {
		t.Errorf("log rotation defaults: %d bytes, %d files; want the kubelet's 10Mi and 5", c.containerLogMaxSize, c.containerLogMaxFiles)
	}
	for _, tc := range []struct {
		flag string
		want int64
	}{{"500Ki", 500 << 10}, {"1G", 1e9}, {"2048", 2048}, {"-1", -1}} {
		if c, err := parseFlags([]string{"--container-log-max-size", tc.flag}, io.Discard); err != nil || c.containerLogMaxSize != tc.want {
			t.Errorf("--container-log-max-size %s: %d, %v; want %d", tc.flag, c.containerLogMaxSize, err, tc.want)
		}
	}
	for _, bad := range [][]string{{"--event-qps", "0"}, {"--event-burst", "-1"}, {"--kube-api-qps", "-2"},
		{"--container-log-max-size", "0"}, {"--container-log-max-size", "ten"}, {"--container-log-max-size", "0.5"},
		{"--container-log-max-files", "1"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	if c, err := parseFlags([]string{"--event-qps", "5", "--event-burst", "10"}, io.Discard); err != nil || c.eventQPS != 5 || c.eventBurst != 10 {
		t.Errorf("--event-qps 5 --event-burst 10: %+v, %v", c, err)
	}
	if _, err := parseFlags([]string{"--pod-network"}, io.Discard); err == nil {
		t.Error("--pod-network without --cri-endpoint: no error")
	}
	if c, err := parseFlags([]string{"--pod-network", "--cri-endpoint", "unix:///x.sock"}, io.Discard); err != nil || !c.podNetwork {
		t.Errorf("--pod-network --cri-endpoint: %+v, %v", c, err)
	}
	if code := run([]string{"--bogus"}, io.Discard, io.Discard); code != 2 {
		t.Errorf("exit code with a bad flag: %d, want 2", code)
	}
	if code := run([]string{"--kubeconfig", "/does/not/exist", "--listen", "127.0.0.1:0"}, io.Discard, io.Discard); code != 1 {
		t.Errorf("exit code with a missing kubeconfig: %d, want 1", code)
	}
}

// The endpoints of the agent over the shipped manifests.
func TestEndpoints(t *testing.T) {
	reg := prometheus.NewRegistry()
	rt, _, closeRuntime, err := openRuntime("", false, testr.New(t), reg)
	if err != nil {
		t.Fatal(err)
	}
	defer closeRuntime()
	a, err := agent.New(agent.Options{Runtime: rt, NodeName: "test", ManifestPath: filepath.Join("manifests"),
		Registerer: reg, RelistInterval: 50 * time.Millisecond, HousekeepingInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	srv := httptest.NewServer(newMux(a, reg))
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	podworkertest.WaitFor(t, 20*time.Second, "web, logging and mesh running, hello-job finished", func() bool {
		_, body := get("/debug/pods")
		var pods []debugPod
		if err := json.Unmarshal([]byte(body), &pods); err != nil {
			t.Fatalf("/debug/pods: %v\n%s", err, body)
		}
		state := map[string]string{}
		for _, p := range pods {
			state[p.Name] = p.Lifecycle + "/" + string(p.Phase)
		}
		return state["web-test"] == "syncing/Running" && state["logging-test"] == "syncing/Running" &&
			state["mesh-test"] == "syncing/Running" && state["hello-job-test"] == "finished/Succeeded"
	})
	podworkertest.WaitFor(t, 20*time.Second, "mesh Ready: init container done, sidecar started, probes passed", func() bool {
		for _, v := range a.Pods() {
			if v.Name != "mesh-test" {
				continue
			}
			st, ok := a.StatusReporter().Status(v.UID)
			if !ok || len(st.InitContainerStatuses) != 2 || st.InitContainerStatuses[1].Started == nil || !*st.InitContainerStatuses[1].Started {
				return false
			}
			for _, c := range st.Conditions {
				if c.Type == v1.PodReady {
					return c.Status == v1.ConditionTrue
				}
			}
		}
		return false
	})
	if code, body := get("/healthz"); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	podworkertest.WaitFor(t, 20*time.Second, "metrics", func() bool {
		_, body := get("/metrics")
		return strings.Contains(body, `kubelet_desired_pods{static="true"} 4`) &&
			strings.Contains(body, `kubelet_working_pods{config="desired",lifecycle="terminated",static="true"} 1`) &&
			strings.Contains(body, `kubelet_runtime_operations_total{operation_type="start_container"}`)
	})
}

func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo takes about 10 s")
	}
	var out bytes.Buffer
	ok, err := runDemo(context.Background(), &out, testr.New(t))
	if err != nil || !ok {
		t.Fatalf("demo: ok=%v err=%v\n%s", ok, err, out.String())
	}
	for _, want := range []string{"PASS: all", "orphaned runtime pod found at start-up", "init container, sidecar, probes: Ready", "kubelet_restarted_pods_total{static=\"true\"}"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestContainerGCFlags(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	p, none := containerGCPolicy(c)
	if c.containerGCPeriod != time.Minute || p.MinAge != 0 || p.MaxPerPodContainer != 1 || p.MaxContainers != -1 || none {
		t.Errorf("defaults: period %s, policy %+v, keep none %v; want the kubelet's 1m, 0, 1, -1", c.containerGCPeriod, p, none)
	}
	c, err = parseFlags([]string{"--minimum-container-ttl-duration", "1m", "--maximum-dead-containers-per-container", "0",
		"--maximum-dead-containers", "100", "--container-gc-period", "-1s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if p, none := containerGCPolicy(c); p.MinAge != time.Minute || p.MaxContainers != 100 || !none || c.containerGCPeriod >= 0 {
		t.Errorf("set: period %s, policy %+v, keep none %v", c.containerGCPeriod, p, none)
	}
	for _, bad := range [][]string{{"--minimum-container-ttl-duration", "-1s"}, {"--container-gc-period", "0"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// The image garbage collection flags: the kubelet's names, defaults and
// checks.
func TestImageGCFlags(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil || c.imageGCHighThreshold != 85 || c.imageGCLowThreshold != 80 ||
		c.imageMinimumGCAge != 2*time.Minute || c.imageMaximumGCAge != 0 {
		t.Errorf("image GC defaults: %+v, %v", c, err)
	}
	c, err = parseFlags([]string{"--image-gc-high-threshold", "100", "--image-gc-low-threshold", "50",
		"--image-minimum-gc-age", "0", "--image-maximum-gc-age", "24h"}, io.Discard)
	if err != nil || c.imageGCHighThreshold != 100 || c.imageGCLowThreshold != 50 || c.imageMaximumGCAge != 24*time.Hour {
		t.Errorf("image GC flags: %+v, %v", c, err)
	}
	for _, bad := range [][]string{{"--image-gc-high-threshold", "101"}, {"--image-gc-high-threshold", "0"},
		{"--image-gc-low-threshold", "85"}, {"--image-gc-low-threshold", "90"},
		{"--image-minimum-gc-age", "-1s"}, {"--image-maximum-gc-age", "1m"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}
