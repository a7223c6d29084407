package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/podlife/podlife/agent/server"
	"github.com/podlife/podlife/runtime"
)

// tokenAuth authenticates "Bearer NAME" as user NAME; anything else fails.
var tokenAuth = authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
	const p = "Bearer "
	h := r.Header.Get("Authorization")
	if len(h) <= len(p) || h[:len(p)] != p {
		return nil, false, nil
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: h[len(p):]}}, true, nil
})

// recordingAuthz allows every user but "nobody" and records what it was
// asked.
type recordingAuthz struct {
	mu    sync.Mutex
	asked []authorizer.Attributes
}

func (a *recordingAuthz) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	a.mu.Lock()
	a.asked = append(a.asked, attrs)
	a.mu.Unlock()
	if attrs.GetUser().GetName() == "nobody" {
		return authorizer.DecisionDeny, "nobody may", nil
	}
	return authorizer.DecisionAllow, "", nil
}

func (a *recordingAuthz) last() authorizer.Attributes {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.asked[len(a.asked)-1]
}

// world is the fakes a test server runs on.
type world struct {
	mu      sync.Mutex
	pods    []*v1.Pod
	logs    map[string]string // container ID → log path
	running map[string]bool
	down    bool // the runtime is unavailable
	backend *httptest.Server
	stats   []statsapi.PodStats
}

func (w *world) ListPods() []*v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pods
}

func (w *world) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.down {
		return fmt.Errorf("runtime down: %w", runtime.ErrUnavailable)
	}
	return nil
}

func (w *world) ContainerLogPath(_ context.Context, id string) (string, error) {
	if err := w.err(); err != nil {
		return "", err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.logs[id]
	if !ok {
		return "", fmt.Errorf("container %q: %w", id, runtime.ErrNotFound)
	}
	return p, nil
}

func (w *world) ContainerRunning(_ context.Context, id string) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.running[id], nil
}

func (w *world) setRunning(id string, r bool) {
	w.mu.Lock()
	w.running[id] = r
	w.mu.Unlock()
}

func (w *world) url(kind string) (*url.URL, error) {
	if err := w.err(); err != nil {
		return nil, err
	}
	return url.Parse(w.backend.URL + "/" + kind)
}

func (w *world) GetExec(_ context.Context, id string, cmd []string, stdin, stdout, stderr, tty bool) (*url.URL, error) {
	return w.url("exec")
}

func (w *world) GetAttach(_ context.Context, id string, stdin, stdout, stderr, tty bool) (*url.URL, error) {
	return w.url("attach")
}

func (w *world) GetPortForward(_ context.Context, uid types.UID, ports []int32) (*url.URL, error) {
	return w.url("portforward")
}

func (w *world) ExecSync(_ context.Context, id string, cmd []string, _ time.Duration) ([]byte, []byte, int32, error) {
	if err := w.err(); err != nil {
		return nil, nil, 0, err
	}
	if cmd[0] == "fail" {
		return []byte("out"), []byte("err"), 3, nil
	}
	return []byte(fmt.Sprint(cmd)), nil, 0, nil
}

func (w *world) ListPodStats(context.Context) ([]statsapi.PodStats, error) {
	if err := w.err(); err != nil {
		return nil, err
	}
	return w.stats, nil
}

// echoBackend is a runtime streaming server: it upgrades any request and
// echoes every byte back.
func echoBackend(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer func() { _ = c.Close() }()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + r.Header.Get("Upgrade") + "\r\n\r\n")
		_ = rw.Flush()
		_, _ = io.Copy(c, rw)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// runningPod is a pod ns/name with one running container "c" whose
// runtime ID is id, and one waiting container "w".
func runningPod(ns, name, id string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name + "-uid")},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c"}, {Name: "w"}}},
		Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{
			{Name: "c", ContainerID: "fake://" + id, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}},
				LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ContainerID: "fake://" + id + "-old"}}},
			{Name: "w", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}},
		}},
	}
}

// newWorld makes a world with pod default/p (container c, ID "c1") whose
// log has the given CRI lines, and its previous instance's log.
func newWorld(t *testing.T, lines ...string) (*world, string) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	writeLines(t, path, lines...)
	old := filepath.Join(dir, "old.log")
	writeLines(t, old, "2026-01-01T00:00:00.000000000Z stdout F previous instance")
	w := &world{
		pods:    []*v1.Pod{runningPod("default", "p", "c1")},
		logs:    map[string]string{"c1": path, "c1-old": old},
		running: map[string]bool{"c1": true},
	}
	w.backend = echoBackend(t)
	return w, path
}

func writeLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if _, err := fmt.Fprintln(f, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// newServer serves w with the token authenticator and a recording
// authorizer, over plain HTTP (httptest), and returns its URL.
func newServer(t *testing.T, w *world, mod ...func(*server.Options)) (string, *recordingAuthz) {
	t.Helper()
	authz := &recordingAuthz{}
	opts := server.Options{
		NodeName: "n1", Authenticator: tokenAuth, Authorizer: authz,
		Pods: w, Logs: w, Streaming: w, Commands: w, Stats: w,
		NodeStats: fixedNodeStats{},
		Logger:    testr.New(t),
	}
	for _, m := range mod {
		m(&opts)
	}
	s, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return hs.URL, authz
}

type fixedNodeStats struct{}

func (fixedNodeStats) NodeStats(context.Context) (statsapi.NodeStats, error) {
	cpu, ws := uint64(5e9), uint64(1<<30)
	t := metav1.NewTime(time.Unix(1700000000, 0))
	return statsapi.NodeStats{CPU: &statsapi.CPUStats{Time: t, UsageCoreNanoSeconds: &cpu},
		Memory: &statsapi.MemoryStats{Time: t, WorkingSetBytes: &ws}}, nil
}

// get does a request as user (no credentials when ""), and returns the
// code and body.
func get(t *testing.T, method, u, user string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+user)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// upgrade opens an upgraded connection to base+path as user "admin".
func upgrade(t *testing.T, base, path string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	u, _ := url.Parse(base)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer admin\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nContent-Length: 0\r\n\r\n", path, u.Host)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, br, resp
}
