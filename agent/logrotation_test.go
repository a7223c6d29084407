package agent_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/agent/server"
	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/fakecri"
)

// followWatch counts the log reader's "is it still running?" questions:
// the reader asks once it watches the log's folder for changes.
type followWatch struct {
	server.ContainerLogs
	asked atomic.Int32
}

func (f *followWatch) ContainerRunning(ctx context.Context, id string) (bool, error) {
	f.asked.Add(1)
	return f.ContainerLogs.ContainerRunning(ctx, id)
}

// lockedLines collects the lines of a followed log.
type lockedLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *lockedLines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
}

func (l *lockedLines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// A chatty container on fakecri under an agent: its log is rotated at
// ContainerLogMaxSize, at most ContainerLogMaxFiles files stay on disk,
// kubectl logs (the node server) returns the newest lines, and kubectl
// logs -f follows the log across the rotations without losing a line.
func TestContainerLogRotation(t *testing.T) {
	srv, endpoint := startFakeCRI(t, fakecri.Options{})
	dir := t.TempDir()
	writeManifest(t, dir, "chatty", manifest("chatty", 1, "log", "line 000000"))
	rt := newRuntime(t, endpoint)
	watch := &followWatch{ContainerLogs: rt}
	anyone := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: "admin"}}, true, nil
	})
	const maxSize, maxFiles = 2048, 3
	ra := startAgentOn(t, rt, dir, func(o *agent.Options) {
		o.Server = &server.Options{Address: "127.0.0.1", Port: -1, Authenticator: anyone,
			Authorizer: authorizerfactory.NewAlwaysAllowAuthorizer(), Logs: watch}
		o.ContainerLogMaxSize = maxSize
		o.ContainerLogMaxFiles = maxFiles
		o.ContainerLogMonitorInterval = 20 * time.Millisecond
	})
	if ra.LogRotation() == nil {
		t.Fatal("no log rotation on a CRI runtime")
	}
	uid := ra.podUID(t, "chatty")
	waitRunning(t, ra, uid)
	ids := runningContainerIDs(runtimePods(t, ra.rt, false)[uid])
	if len(ids) != 1 {
		t.Fatalf("running containers %v, want 1", ids)
	}
	id := ids[0]
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	path, err := rt.ContainerLogPath(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	logsURL := fmt.Sprintf("https://127.0.0.1:%d/containerLogs/default/chatty-node1/main", ra.Server().Port())

	// kubectl logs -f, from the start.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, logsURL+"?follow=true", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("follow: %d %s", resp.StatusCode, b)
	}
	var followed lockedLines
	followDone := make(chan struct{})
	go func() {
		defer close(followDone)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			followed.add(sc.Text())
		}
	}()
	podworkertest.WaitFor(t, waitTimeout, "the follow to watch the log", func() bool { return watch.asked.Load() > 0 })

	next := 1
	for round := range 6 {
		// 30 lines, about 3 KB in the file: over the maximum size.
		var b strings.Builder
		for i := next; i < next+30; i++ {
			l := fmt.Sprintf("line %06d ", i)
			b.WriteString(l + strings.Repeat("x", 60-len(l)) + "\n")
		}
		if err := srv.WriteLog(id, "stdout", b.String()); err != nil {
			t.Fatal(err)
		}
		next += 30
		podworkertest.WaitFor(t, waitTimeout, fmt.Sprintf("rotation %d", round+1), func() bool {
			info, err := os.Stat(path)
			return err == nil && info.Size() < maxSize
		})
		entries, err := os.ReadDir(filepath.Dir(path))
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) > maxFiles {
			t.Fatalf("rotation %d: %d files, want at most %d", round+1, len(entries), maxFiles)
		}
	}
	if err := srv.WriteLog(id, "stdout", "the last line"); err != nil {
		t.Fatal(err)
	}
	var names []string
	entries, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != maxFiles || !strings.HasSuffix(names[1], ".gz") || strings.HasSuffix(names[2], ".gz") {
		t.Errorf("files %v, want 0.log, one compressed and the newest rotated one", names)
	}

	// kubectl logs --tail 2: the newest lines, from the current file.
	tailResp, err := client.Get(logsURL + "?tailLines=2")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(tailResp.Body)
	_ = tailResp.Body.Close()
	if got := string(body); got != "the last line\n" {
		t.Errorf("logs --tail 2 after a rotation: %q, want the line written since", got)
	}

	podworkertest.WaitFor(t, waitTimeout, "the follow to reach the last line", func() bool {
		l := followed.get()
		return len(l) > 0 && l[len(l)-1] == "the last line"
	})
	got := followed.get()
	if len(got) != next+1 {
		t.Errorf("followed %d lines, want every one of the %d written", len(got), next+1)
	}
	for i := range min(next, len(got)) {
		if !strings.HasPrefix(got[i], fmt.Sprintf("line %06d", i)) {
			t.Fatalf("followed line %d is %q: lost or out of order", i, got[i])
		}
	}
	cancel()
	<-followDone
}

// Log rotation runs by default on a runtime that can reopen container
// logs, and not with a negative ContainerLogMaxSize nor on a runtime that
// cannot.
func TestLogRotationWhen(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	rt := newRuntime(t, endpoint)
	for _, tc := range []struct {
		name string
		opts agent.Options
		on   bool
	}{
		{"default on a CRI runtime", agent.Options{Runtime: rt}, true},
		{"turned off", agent.Options{Runtime: rt, ContainerLogMaxSize: -1}, false},
		{"a runtime that cannot reopen logs", agent.Options{Runtime: struct{ runtime.Runtime }{rt}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.NodeName = "n"
			a, err := agent.New(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if on := a.LogRotation() != nil; on != tc.on {
				t.Errorf("log rotation on: %v, want %v", on, tc.on)
			}
		})
	}
}
