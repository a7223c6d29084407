package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/podlife/podlife/test/apitest"
)

// debugNode is a nodeagent joined to the real control plane, its node
// server on the test host's address (scripts/testhost), which the API
// server's node proxy and metrics-server may dial, unlike a loopback one.
type debugNode struct {
	api  *apitest.API
	node string
	// addr is the node server's address, the Node's InternalIP; port the
	// port it serves on, published in the Node.
	addr string
	port int32
	// ns is the test's namespace; kc the admin kubeconfig.
	ns string
	kc string
	// kubectlPath is the control plane script's kubectl.
	kubectlPath string
	// msStarted is when startMetricsServer started metrics-server.
	msStarted time.Time
}

// startDebugNode brings up the test host's address, runs nodeagent as
// node (on the CRI endpoint, or the embedded fakecri runtime when
// endpoint is ""), with its node server on that address, waits for the
// Node to publish the port, and makes a namespace. At cleanup the pods
// are deleted (the agent terminates them), the agent stops, the Node
// goes, and the address too.
func startDebugNode(t *testing.T, node, endpoint string) *debugNode {
	t.Helper()
	api := apitest.New(t)
	addr := testHost(t)
	api.DeleteNode(node)
	api.DeleteNodeAtCleanup(t, node)
	ctx := context.Background()

	args := []string{"--kubeconfig", api.NodeKubeconfig(t, node), "--node-name", node,
		"--manifests", t.TempDir(), "--listen", "127.0.0.1:0",
		"--port", "0", "--address", addr, "--node-ip", addr,
		"--client-ca-file", filepath.Join(api.Dir, "ca.crt")}
	args = append(args, testHostArgs...)
	if endpoint != "" {
		args = append(args, "--cri-endpoint", endpoint)
	}
	c, err := parseFlags(args, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- serve(actx, c, testr.NewWithOptions(t, testr.Options{Verbosity: 1})) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	d := &debugNode{api: api, node: node, addr: addr, kc: filepath.Join(api.Dir, "admin.kubeconfig"), kubectlPath: api.Kubectl(t)}
	api.Eventually(t, 60*time.Second, "node with its server port", func() (bool, error) {
		n, err := api.Admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		d.port = n.Status.DaemonEndpoints.KubeletEndpoint.Port
		return d.port != 0 && d.port != 10250, nil
	})

	d.ns = api.Namespace(t)
	// Before the namespace goes and the agent stops: the agent terminates
	// the pods, so that nothing is left running in the runtime.
	t.Cleanup(func() {
		_ = api.Admin.CoreV1().Pods(d.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64(1))}, metav1.ListOptions{})
		api.Eventually(t, 60*time.Second, "pods gone", func() (bool, error) {
			l, err := api.Admin.CoreV1().Pods(d.ns).List(ctx, metav1.ListOptions{})
			return err == nil && len(l.Items) == 0, nil
		})
	})
	return d
}

// testHost runs scripts/testhost/up.sh (a non-loopback address that exists
// only on this machine, in a network namespace of its own) and returns the
// address; down.sh removes it when the test ends, whatever happens. It
// skips the test, with the reason, when not root or without `ip`.
func testHost(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: the test host's address needs a network namespace and a veth pair (scripts/testhost/up.sh)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skipf("no ip command (iproute2) for the test host's address: %v", err)
	}
	up, down := scriptPath(t, "testhost/up.sh"), scriptPath(t, "testhost/down.sh")
	t.Cleanup(func() {
		if out, err := exec.Command("bash", down).CombinedOutput(); err != nil {
			t.Errorf("testhost/down.sh: %v: %s", err, out)
		}
	})
	var stderr bytes.Buffer
	cmd := exec.Command("bash", up)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("testhost/up.sh: %v: %s", err, stderr.String())
	}
	addr := strings.TrimSpace(string(out))
	if ip := net.ParseIP(addr); ip == nil || ip.IsLoopback() {
		t.Fatalf("testhost/up.sh printed %q, want a non-loopback address", addr)
	}
	return addr
}

// scriptPath is the path of scripts/NAME in this repository.
func scriptPath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "scripts", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// metricsResolution is metrics-server's --metric-resolution in the tests:
// the least it accepts, since `kubectl top` answers after two scrapes.
const metricsResolution = 10 * time.Second

// startMetricsServer runs scripts/metrics-server/start.sh on the node's
// address, scraping only this node, with the metrics API registered for
// `kubectl top`; stop.sh unregisters and stops it at cleanup. It returns
// the path of its log.
func (d *debugNode) startMetricsServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(d.addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	env := append(os.Environ(), "API_DIR="+d.api.Dir)
	t.Cleanup(func() {
		cmd := exec.Command("bash", scriptPath(t, "metrics-server/stop.sh"))
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("metrics-server/stop.sh: %v: %s", err, out)
		}
	})
	cmd := exec.Command("bash", scriptPath(t, "metrics-server/start.sh"))
	cmd.Env = append(env, "MS_ADDRESS="+d.addr, "MS_PORT="+strconv.Itoa(port),
		"MS_RESOLUTION="+metricsResolution.String(), "MS_NODE_SELECTOR="+v1.LabelHostname+"="+d.node)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	d.msStarted = time.Now()
	if _, err := cmd.Output(); err != nil {
		log, _ := os.ReadFile(filepath.Join(d.api.Dir, "metrics-server.log"))
		t.Fatalf("metrics-server/start.sh: %v: %s\nlog:\n%s", err, stderr.String(), log)
	}
	return filepath.Join(d.api.Dir, "metrics-server.log")
}

// kubectl runs kubectl as admin in the test's namespace and returns its
// output and exit code.
func (d *debugNode) kubectl(t *testing.T, stdin string, args ...string) (string, int) {
	t.Helper()
	out, errOut, code := d.kubectlQuiet(t, stdin, args...)
	if code != 0 {
		t.Logf("kubectl %v: exit %d, stderr %s", args, code, errOut)
	}
	return out, code
}

// kubectlQuiet is kubectl without logging, for polling; it returns the
// standard error too.
func (d *debugNode) kubectlQuiet(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.kubectlPath, append([]string{"--kubeconfig", d.kc, "-n", d.ns}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("kubectl %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// expect runs kubectl and checks its exit code and that its output holds
// want.
func (d *debugNode) expect(t *testing.T, want string, wantCode int, stdin string, args ...string) string {
	t.Helper()
	out, code := d.kubectl(t, stdin, args...)
	if code != wantCode || (want != "" && !strings.Contains(out, want)) {
		t.Errorf("kubectl %s: exit %d, output %q; want exit %d with %q", strings.Join(args, " "), code, out, wantCode, want)
	}
	return out
}

// pod creates a pod of the local pause image on the node, on the node's
// network.
func (d *debugNode) pod(t *testing.T, name string, restart v1.RestartPolicy, cs ...v1.Container) {
	t.Helper()
	for i := range cs {
		cs[i].Image, cs[i].ImagePullPolicy = "localhost/podlife/pause:1.0", v1.PullIfNotPresent
	}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.ns},
		Spec: v1.PodSpec{NodeName: d.node, RestartPolicy: restart, Containers: cs,
			TerminationGracePeriodSeconds: new(int64(1)), HostNetwork: true}}
	if _, err := d.api.Admin.CoreV1().Pods(d.ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// portForward runs kubectl port-forward to the pod's remote port and
// checks that an HTTP GET through it answers 200 with want.
func (d *debugNode) portForward(t *testing.T, pod string, remote int, want string) {
	t.Helper()
	local := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, d.kubectlPath, "--kubeconfig", d.kc, "-n", d.ns, "port-forward", "pod/"+pod,
		fmt.Sprintf("%d:%d", local, remote), "--address", "127.0.0.1")
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.Contains(line, "Forwarding from") {
		t.Fatalf("port-forward: %q %v", line, err)
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d/", local))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != want {
		t.Errorf("through port-forward: %d %q, want 200 %q", resp.StatusCode, b, want)
	}
}

// checkNodeProxy reads /stats/summary, /pods and /metrics/resource through
// the API server's node proxy (`kubectl get --raw
// /api/v1/nodes/N/proxy/...`): the summary lists every running pod of the
// node with CPU and memory figures, and the node's; each container of busy
// ("pod/container", in the test's namespace; running ones: a container
// between two restarts is listed without figures, as by the kubelet) has
// used some CPU and memory.
func (d *debugNode) checkNodeProxy(t *testing.T, busy ...string) {
	t.Helper()
	ctx := context.Background()
	proxy := "/api/v1/nodes/" + d.node + "/proxy"
	out, code := d.kubectl(t, "", "get", "--raw", proxy+"/stats/summary")
	if code != 0 {
		t.Fatalf("get --raw %s/stats/summary: exit %d", proxy, code)
	}
	var sum statsapi.Summary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("summary: %v: %s", err, out)
	}
	if sum.Node.NodeName != d.node || sum.Node.CPU == nil || sum.Node.CPU.UsageCoreNanoSeconds == nil ||
		sum.Node.Memory == nil || sum.Node.Memory.WorkingSetBytes == nil {
		t.Errorf("summary: node without its name, CPU or memory: %s", out)
	}
	pods, err := d.api.Admin.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + d.node})
	if err != nil {
		t.Fatal(err)
	}
	byRef := map[string]statsapi.PodStats{}
	for _, p := range sum.Pods {
		byRef[p.PodRef.Namespace+"/"+p.PodRef.Name] = p
	}
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase != v1.PodRunning {
			continue
		}
		running++
		ps, ok := byRef[p.Namespace+"/"+p.Name]
		switch {
		case !ok:
			t.Errorf("summary: running pod %s/%s missing: %s", p.Namespace, p.Name, out)
		case ps.CPU == nil || ps.CPU.UsageCoreNanoSeconds == nil || ps.Memory == nil || ps.Memory.WorkingSetBytes == nil:
			t.Errorf("summary: pod %s/%s without CPU or memory: %s", p.Namespace, p.Name, out)
		}
	}
	if running == 0 {
		t.Errorf("no running pod on %s to check the summary with", d.node)
	}
	for _, b := range busy {
		pod, ctr, _ := strings.Cut(b, "/")
		var cs *statsapi.ContainerStats
		for _, c := range byRef[d.ns+"/"+pod].Containers {
			if c.Name == ctr {
				cs = &c
			}
		}
		if cs == nil || cs.CPU == nil || cs.CPU.UsageCoreNanoSeconds == nil || *cs.CPU.UsageCoreNanoSeconds == 0 ||
			cs.Memory == nil || cs.Memory.WorkingSetBytes == nil || *cs.Memory.WorkingSetBytes == 0 {
			t.Errorf("summary: container %s without CPU or memory used: %+v", b, cs)
		}
	}

	out, code = d.kubectl(t, "", "get", "--raw", proxy+"/pods")
	var list v1.PodList
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil {
		t.Errorf("get --raw %s/pods: exit %d, %v: %s", proxy, code, err, out)
	}
	seen := map[string]bool{}
	for _, p := range list.Items {
		seen[p.Namespace+"/"+p.Name] = true
	}
	for _, p := range pods.Items {
		if p.Status.Phase == v1.PodRunning && !seen[p.Namespace+"/"+p.Name] {
			t.Errorf("get --raw %s/pods: pod %s/%s missing", proxy, p.Namespace, p.Name)
		}
	}

	out, code = d.kubectl(t, "", "get", "--raw", proxy+"/metrics/resource")
	for _, b := range busy {
		pod, ctr, _ := strings.Cut(b, "/")
		want := fmt.Sprintf(`container_cpu_usage_seconds_total{container=%q,namespace=%q,pod=%q}`, ctr, d.ns, pod)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("get --raw %s/metrics/resource: exit %d, no %s in:\n%s", proxy, code, want, out)
		}
	}
	if !strings.Contains(out, "node_cpu_usage_seconds_total") || !strings.Contains(out, "node_memory_working_set_bytes") {
		t.Errorf("get --raw %s/metrics/resource: no node figures:\n%s", proxy, out)
	}
}

// topTimeout bounds the wait for `kubectl top`: metrics-server answers
// after two scrapes, metricsResolution apart.
const topTimeout = 90 * time.Second

// checkTop waits until `kubectl top node` shows the node's figures and
// `kubectl top pod` those of each of pods, then checks that metrics-server
// logged no scrape failure. It returns how long after metrics-server's
// start `kubectl top` answered.
func (d *debugNode) checkTop(t *testing.T, msLog string, pods ...string) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(topTimeout)
	poll := func(what string, ok func(rows map[string][]string) bool, args ...string) {
		t.Helper()
		for {
			out, errOut, code := d.kubectlQuiet(t, "", args...)
			rows := map[string][]string{}
			for line := range strings.Lines(out) {
				if f := strings.Fields(line); len(f) > 0 {
					rows[f[0]] = f[1:]
				}
			}
			if code == 0 && ok(rows) {
				t.Logf("kubectl %s, %v after metrics-server's start:\n%s", strings.Join(args, " "), time.Since(d.msStarted).Round(time.Millisecond), out)
				return
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(msLog)
				t.Fatalf("%s: not shown after %v: exit %d, %q, stderr %q\nmetrics-server log:\n%s", what, topTimeout, code, out, errOut, log)
			}
			time.Sleep(time.Second)
		}
	}
	// NAME CPU(cores) CPU(%) MEMORY(bytes) MEMORY(%), figures not <unknown>.
	poll("kubectl top node", func(rows map[string][]string) bool {
		r := rows[d.node]
		return len(r) == 4 && figures(r[0], "m") && figures(r[2], "Ki", "Mi", "Gi")
	}, "top", "node", d.node, "--no-headers")
	// NAME CPU(cores) MEMORY(bytes)
	poll("kubectl top pod", func(rows map[string][]string) bool {
		for _, p := range pods {
			r := rows[p]
			if len(r) != 2 || !figures(r[0], "m") || !figures(r[1], "Ki", "Mi", "Gi") {
				return false
			}
		}
		return true
	}, "top", "pod", "--no-headers")
	took := time.Since(d.msStarted)

	log, err := os.ReadFile(msLog)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(log)) {
		for _, bad := range []string{"Failed to scrape node", "Skipping node usage metric", "Skipping container usage metric", "duplicate"} {
			if strings.Contains(line, bad) {
				t.Errorf("metrics-server: %s", strings.TrimSpace(line))
			}
		}
	}
	return took
}

// figures reports whether s is a quantity as kubectl top prints it: digits
// and one of the units (no unit: a whole number, e.g. CPU cores).
func figures(s string, units ...string) bool {
	n := s
	for _, u := range units {
		if strings.HasSuffix(s, u) {
			n = strings.TrimSuffix(s, u)
			break
		}
	}
	_, err := strconv.ParseUint(n, 10, 64)
	return err == nil
}

// TestDebugPodsFakecri: on the embedded fakecri runtime (nodeagent's
// default), kubectl logs, exec and port-forward reach pods through the API
// server and the node server; `kubectl get --raw .../proxy/stats/summary`
// lists them with CPU and memory; metrics-server scrapes the node and
// `kubectl top node` and `kubectl top pod` show figures. It needs
// PODLIFE_API_DIR with node srv-2 among API_NODES, and root (the test
// host's address).
func TestDebugPodsFakecri(t *testing.T) {
	begin := time.Now()
	d := startDebugNode(t, "srv-2", "")
	// fakecri forwards a pod's ports to 127.0.0.1 (the node's network).
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }))
	t.Cleanup(web.Close)
	webPort := web.Listener.Addr().(*net.TCPAddr).Port
	d.pod(t, "app", v1.RestartPolicyAlways,
		v1.Container{Name: "main", Args: []string{"log", "hello from main"}},
		v1.Container{Name: "web", Args: []string{"serve", strconv.Itoa(webPort)}})
	d.pod(t, "other", v1.RestartPolicyAlways, v1.Container{Name: "main"})
	for _, name := range []string{"app", "other"} {
		waitPod(t, d.api, d.ns, name, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	}
	msLog := d.startMetricsServer(t)

	t.Run("logs", func(t *testing.T) {
		d.expect(t, "hello from main\n", 0, "", "logs", "app", "-c", "main")
		if out := d.expect(t, "hello", 0, "", "logs", "app", "-c", "main", "--limit-bytes", "5"); out != "hello" {
			t.Errorf("--limit-bytes 5: %q", out)
		}
		d.expect(t, "", 1, "", "logs", "app", "-c", "nope")
		if got := d.wsLog(t, "app", "main"); got != "hello from main\n" {
			t.Errorf("log over a WebSocket: %q, want %q", got, "hello from main\n")
		}
	})
	t.Run("exec", func(t *testing.T) {
		d.expect(t, "hi there\n", 0, "", "exec", "app", "-c", "main", "--", "/pause", "echo", "hi", "there")
		d.expect(t, "", 3, "", "exec", "app", "-c", "main", "--", "/pause", "exit", "3")
	})
	t.Run("port-forward", func(t *testing.T) { d.portForward(t, "app", webPort, "ok\n") })
	t.Run("node proxy", func(t *testing.T) { d.checkNodeProxy(t, "app/main", "app/web", "other/main") })
	t.Run("top", func(t *testing.T) {
		took := d.checkTop(t, msLog, "app", "other")
		t.Logf("kubectl top answered %v after metrics-server started (resolution %v)", took.Round(time.Millisecond), metricsResolution)
	})
	t.Logf("test took %v", time.Since(begin).Round(time.Millisecond))
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

func waitPod(t *testing.T, api *apitest.API, ns, name string, ok func(*v1.Pod) bool) {
	t.Helper()
	api.Eventually(t, 90*time.Second, "pod "+name, func() (bool, error) {
		p, err := api.Admin.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return ok(p), nil
	})
}

// nodeToken reads the bearer token of a node kubeconfig.
func nodeToken(t *testing.T, path string) string {
	t.Helper()
	cfg, err := apitest.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BearerToken == "" {
		t.Skip("the node credentials are not a token")
	}
	return cfg.BearerToken
}
