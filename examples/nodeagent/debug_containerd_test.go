package main

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDebugPodsContainerd: kubectl logs, exec, attach, port-forward,
// get --raw .../proxy/stats/summary (and /pods, /metrics/resource) and
// top, as a user types them, reach pods that nodeagent runs on
// containerd, through the API server, the node server and metrics-server;
// the node server refuses callers without credentials or rights. The node
// server listens on the test host's address (scripts/testhost: root), as
// the API server's node proxy and aggregator refuse loopback ones. It
// needs PODLIFE_AGENT_CRI_ENDPOINT (alone on its containerd: the agent
// terminates every pod it does not know) and PODLIFE_API_DIR with node
// srv-1 among API_NODES.
func TestDebugPodsContainerd(t *testing.T) {
	begin := time.Now()
	endpoint := os.Getenv("PODLIFE_AGENT_CRI_ENDPOINT")
	if endpoint == "" {
		t.Skip("PODLIFE_AGENT_CRI_ENDPOINT is not set: skipping kubectl against a node on containerd")
	}
	d := startDebugNode(t, "srv-1", endpoint)
	api, node, ns, port := d.api, d.node, d.ns, d.port
	ctx := context.Background()
	webPort := freePort(t)
	pod := func(name string, restart v1.RestartPolicy, cs ...v1.Container) { d.pod(t, name, restart, cs...) }
	pod("app", v1.RestartPolicyAlways,
		v1.Container{Name: "main", Args: []string{"log", "hello from main"}},
		v1.Container{Name: "web", Args: []string{"serve", strconv.Itoa(webPort)}},
		v1.Container{Name: "crash", Args: []string{"exit", "3", "1"}})
	// Steady pods for kubectl top: metrics-server shows a pod once each of
	// its containers has two points of the same start, which app's
	// crashing container seldom has.
	pod("steady", v1.RestartPolicyAlways, v1.Container{Name: "main"}, v1.Container{Name: "side"})
	waitPod(t, api, ns, "app", func(p *v1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "crash" && cs.RestartCount == 0 || cs.Name != "crash" && cs.State.Running == nil {
				return false
			}
		}
		return len(p.Status.ContainerStatuses) == 3
	})
	waitPod(t, api, ns, "steady", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	msLog := d.startMetricsServer(t)

	kubectl := func(stdin string, args ...string) (string, int) {
		t.Helper()
		return d.kubectl(t, stdin, args...)
	}
	expect := func(want string, wantCode int, stdin string, args ...string) string {
		t.Helper()
		return d.expect(t, want, wantCode, stdin, args...)
	}

	t.Run("logs", func(t *testing.T) {
		expect("hello from main\n", 0, "", "logs", "app", "-c", "main")
		expect("hello from main\n", 0, "", "logs", "app", "-c", "main", "--tail", "1")
		if out := expect("", 0, "", "logs", "app", "-c", "main", "--tail", "0"); out != "" {
			t.Errorf("--tail 0: %q", out)
		}
		if out := expect("hello", 0, "", "logs", "app", "-c", "main", "--limit-bytes", "5"); out != "hello" {
			t.Errorf("--limit-bytes 5: %q", out)
		}
		out := expect(" hello from main\n", 0, "", "logs", "app", "-c", "main", "--timestamps")
		if _, err := time.Parse(time.RFC3339Nano, strings.Fields(out)[0]); err != nil {
			t.Errorf("--timestamps: %q: %v", out, err)
		}
		expect("hello from main\n", 0, "", "logs", "app", "-c", "main", "--since", "1h")
		expect("pause: exiting with 3\n", 0, "", "logs", "app", "-c", "crash", "--previous")
		expect("", 1, "", "logs", "app", "-c", "nope")
		expect("", 1, "", "logs", "app", "-c", "main", "--previous")
	})
	t.Run("exec", func(t *testing.T) {
		expect("hi there\n", 0, "", "exec", "app", "-c", "main", "--", "/pause", "echo", "hi", "there")
		expect("", 3, "", "exec", "app", "-c", "main", "--", "/pause", "exit", "3")
		expect("with stdin\n", 0, "ignored input\n", "exec", "-i", "app", "-c", "main", "--", "/pause", "echo", "with stdin")
	})
	t.Run("port-forward", func(t *testing.T) { d.portForward(t, "app", webPort, "ok\n") })
	t.Run("follow and attach", func(t *testing.T) {
		pod("late", v1.RestartPolicyNever,
			v1.Container{Name: "a", Args: []string{"exit", "0", "8"}},
			v1.Container{Name: "b", Args: []string{"exit", "0", "8"}})
		waitPod(t, api, ns, "late", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
		type result struct {
			out  string
			code int
		}
		att := make(chan result, 1)
		go func() { o, c := kubectl("", "attach", "late", "-c", "b"); att <- result{o, c} }()
		// -f follows until the container exits: its one line, once.
		if out := expect("", 0, "", "logs", "-f", "late", "-c", "a"); out != "pause: exiting with 0\n" {
			t.Errorf("logs -f: %q", out)
		}
		r := <-att
		if !strings.Contains(r.out, "pause: exiting with 0") {
			t.Errorf("attach: exit %d, %q", r.code, r.out)
		}
	})
	t.Run("node proxy", func(t *testing.T) { d.checkNodeProxy(t, "app/main", "app/web", "steady/main", "steady/side") })
	t.Run("top", func(t *testing.T) {
		took := d.checkTop(t, msLog, "steady")
		t.Logf("kubectl top answered %v after metrics-server started (resolution %v)", took.Round(time.Millisecond), metricsResolution)
	})
	t.Run("security", func(t *testing.T) {
		base := "https://" + net.JoinHostPort(d.addr, strconv.Itoa(int(port)))
		direct := func(token, path string) int {
			req, _ := http.NewRequest("GET", base+path, nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			cl := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
			resp, err := cl.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			return resp.StatusCode
		}
		logs := "/containerLogs/" + ns + "/app/main"
		if code := direct("", logs); code != 401 {
			t.Errorf("no credentials: %d, want 401", code)
		}
		sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns}}
		if _, err := api.Admin.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tok, err := api.Admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "reader", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if code := direct(tok.Status.Token, logs); code != 403 {
			t.Errorf("logs without nodes/proxy: %d, want 403", code)
		}
		if code := direct(tok.Status.Token, "/exec/"+ns+"/app/main?command=ls&stdout=1"); code != 403 {
			t.Errorf("exec without nodes/proxy: %d, want 403", code)
		}
		nodeTok := nodeToken(t, api.NodeKubeconfig(t, node))
		if code := direct(nodeTok, "/exec/"+ns+"/app/main?command=ls&stdout=1"); code != 403 {
			t.Errorf("exec with the node's credentials: %d, want 403", code)
		}
	})
	t.Logf("test took %v", time.Since(begin).Round(time.Millisecond))
}
