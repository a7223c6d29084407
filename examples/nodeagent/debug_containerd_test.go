package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/podlife/podlife/test/apitest"
)

// kubectlPath is the control plane script's kubectl.
const kubectlPath = "/var/cache/podlife-apiserver/bin/kubectl"

// TestDebugPodsContainerd: kubectl logs, exec, attach, port-forward and
// get --raw .../proxy/stats/summary, as a user types them, reach pods that
// nodeagent runs on containerd, through the API server and the node
// server; the node server refuses callers without credentials or rights.
// It needs PODLIFE_AGENT_CRI_ENDPOINT (alone on its containerd: the agent
// terminates every pod it does not know) and PODLIFE_API_DIR with node
// srv-1 among API_NODES.
func TestDebugPodsContainerd(t *testing.T) {
	endpoint := os.Getenv("PODLIFE_AGENT_CRI_ENDPOINT")
	if endpoint == "" {
		t.Skip("PODLIFE_AGENT_CRI_ENDPOINT is not set: skipping kubectl against a node on containerd")
	}
	api := apitest.New(t)
	if _, err := os.Stat(kubectlPath); err != nil {
		t.Skipf("no kubectl: %v", err)
	}
	const node = "srv-1"
	api.DeleteNode(node)
	api.DeleteNodeAtCleanup(t, node)
	ctx := context.Background()

	c, err := parseFlags([]string{"--kubeconfig", api.NodeKubeconfig(t, node), "--node-name", node,
		"--cri-endpoint", endpoint, "--manifests", t.TempDir(), "--listen", "127.0.0.1:0",
		"--port", "0", "--address", "127.0.0.1", "--node-ip", "127.0.0.1",
		"--client-ca-file", filepath.Join(api.Dir, "ca.crt")}, os.Stderr)
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
	var port int32
	api.Eventually(t, 60*time.Second, "node with its server port", func() (bool, error) {
		n, err := api.Admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		port = n.Status.DaemonEndpoints.KubeletEndpoint.Port
		return port != 0 && port != 10250, nil
	})

	ns := api.Namespace(t)
	// Before the namespace goes and the agent stops: the agent terminates
	// the pods, so that nothing is left running in containerd.
	t.Cleanup(func() {
		_ = api.Admin.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64(1))}, metav1.ListOptions{})
		api.Eventually(t, 60*time.Second, "pods gone", func() (bool, error) {
			l, err := api.Admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			return err == nil && len(l.Items) == 0, nil
		})
	})
	webPort := freePort(t)
	pod := func(name string, restart v1.RestartPolicy, cs ...v1.Container) {
		for i := range cs {
			cs[i].Image, cs[i].ImagePullPolicy = "localhost/podlife/pause:1.0", v1.PullIfNotPresent
		}
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1.PodSpec{NodeName: node, RestartPolicy: restart, Containers: cs,
				TerminationGracePeriodSeconds: new(int64(1)), HostNetwork: true}}
		if _, err := api.Admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod("app", v1.RestartPolicyAlways,
		v1.Container{Name: "main", Args: []string{"log", "hello from main"}},
		v1.Container{Name: "web", Args: []string{"serve", strconv.Itoa(webPort)}},
		v1.Container{Name: "crash", Args: []string{"exit", "3", "1"}})
	waitPod(t, api, ns, "app", func(p *v1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "crash" && cs.RestartCount == 0 || cs.Name != "crash" && cs.State.Running == nil {
				return false
			}
		}
		return len(p.Status.ContainerStatuses) == 3
	})

	kc := filepath.Join(api.Dir, "admin.kubeconfig")
	kubectl := func(stdin string, args ...string) (string, int) {
		t.Helper()
		cctx, ccancel := context.WithTimeout(ctx, 60*time.Second)
		defer ccancel()
		cmd := exec.CommandContext(cctx, kubectlPath, append([]string{"--kubeconfig", kc, "-n", ns}, args...)...)
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
		if code != 0 {
			t.Logf("kubectl %v: exit %d, stderr %s", args, code, errb.String())
		}
		return out.String(), code
	}
	expect := func(want string, wantCode int, stdin string, args ...string) string {
		t.Helper()
		out, code := kubectl(stdin, args...)
		if code != wantCode || (want != "" && !strings.Contains(out, want)) {
			t.Errorf("kubectl %s: exit %d, output %q; want exit %d with %q", strings.Join(args, " "), code, out, wantCode, want)
		}
		return out
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
	t.Run("port-forward", func(t *testing.T) {
		local := freePort(t)
		cctx, ccancel := context.WithCancel(ctx)
		defer ccancel()
		cmd := exec.CommandContext(cctx, kubectlPath, "--kubeconfig", kc, "-n", ns, "port-forward", "pod/app",
			fmt.Sprintf("%d:%d", local, webPort), "--address", "127.0.0.1")
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { ccancel(); _ = cmd.Wait() }()
		if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.Contains(line, "Forwarding from") {
			t.Fatalf("port-forward: %q %v", line, err)
		}
		resp, err := (&http.Client{Timeout: 20 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d/", local))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "ok\n" {
			t.Errorf("through port-forward: %d %q", resp.StatusCode, b)
		}
	})
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
	t.Run("stats summary", func(t *testing.T) {
		// kubectl get --raw /api/v1/nodes/N/proxy/stats/summary: the API
		// server's node proxy refuses a loopback node address ("address not
		// allowed"), and tests here may only use loopback addresses; so the
		// summary is read as the API server reads it, with its kubelet
		// client certificate.
		if _, code := kubectl("", "get", "--raw", "/api/v1/nodes/"+node+"/proxy/stats/summary"); code == 0 {
			t.Log("the node proxy reached a loopback node")
		}
		cert, err := tls.LoadX509KeyPair(filepath.Join(api.Dir, "kubelet-client.crt"), filepath.Join(api.Dir, "kubelet-client.key"))
		if err != nil {
			t.Fatal(err)
		}
		cl := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}}}}
		resp, err := cl.Get(fmt.Sprintf("https://127.0.0.1:%d/stats/summary", port))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		out := string(b)
		var sum statsapi.Summary
		if err := json.Unmarshal(b, &sum); resp.StatusCode != 200 || err != nil {
			t.Fatalf("summary: %d %v %s", resp.StatusCode, err, out)
		}
		found := false
		for _, p := range sum.Pods {
			if p.PodRef.Namespace == ns && p.PodRef.Name == "app" {
				found = true
				if p.CPU == nil || p.CPU.UsageCoreNanoSeconds == nil || p.Memory == nil || p.Memory.WorkingSetBytes == nil {
					t.Errorf("pod app without CPU or memory: %s", out)
				}
				for _, c := range p.Containers {
					if c.CPU == nil || c.Memory == nil {
						t.Errorf("container %s without CPU or memory: %s", c.Name, out)
					}
				}
			}
		}
		if !found || sum.Node.CPU == nil || sum.Node.Memory == nil {
			t.Errorf("summary: %s", out)
		}
	})
	t.Run("security", func(t *testing.T) {
		base := fmt.Sprintf("https://127.0.0.1:%d", port)
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
