package server_test

import (
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/podlife/podlife/agent/server"
)

func TestStreamsProxied(t *testing.T) {
	w, _ := newWorld(t)
	base, _ := newServer(t, w)
	for _, path := range []string{
		"/exec/default/p/c?command=sh&stdin=1&stdout=1",
		"/exec/default/p/p-uid/c?command=sh&stdin=true&stdout=true",
		"/exec/default/p/c?command=sh&input=1&output=1&error=1", // as the API server sends it
		"/attach/default/p/c?stdin=1&stdout=1",
		"/portForward/default/p?port=8080",
		"/portForward/default/p/p-uid",
	} {
		c, br, resp := upgrade(t, base, path)
		if resp.StatusCode != http.StatusSwitchingProtocols {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		if _, err := io.WriteString(c, "ping"); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4)
		if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "ping" {
			t.Errorf("%s: echo %q %v", path, buf, err)
		}
		_ = c.Close()
	}
}

func TestStreamErrors(t *testing.T) {
	w, _ := newWorld(t)
	base, _ := newServer(t, w)
	for _, tc := range []struct {
		path string
		code int
		msg  string
	}{
		{"/exec/default/p/c?command=sh", 400, "at least 1 of stdin, stdout, stderr"},
		{"/exec/default/p/c?stdout=1", 400, "no command"},
		{"/exec/default/nope/c?command=sh&stdout=1", 404, "does not exist"},
		{"/exec/default/p/other-uid/c?command=sh&stdout=1", 404, "UID"},
		{"/exec/default/p/nope?command=sh&stdout=1", 404, "not found in pod"},
		{"/exec/default/p/w?command=sh&stdout=1", 400, "not running"},
		{"/attach/default/p/w?stdout=1", 400, "not running"},
		{"/portForward/default/p?port=http", 400, "not a valid port"},
		{"/portForward/default/p?port=0", 400, "not a valid port"},
		{"/exec/default/p/c?command=sh&stdout=1", 400, "Upgrade request required"}, // not an upgrade
	} {
		code, body := get(t, "POST", base+tc.path, "admin")
		if code != tc.code || !strings.Contains(body, tc.msg) {
			t.Errorf("%s: %d %q, want %d with %q", tc.path, code, body, tc.code, tc.msg)
		}
	}
	w.mu.Lock()
	w.down = true
	w.mu.Unlock()
	if code, body := get(t, "POST", base+"/exec/default/p/c?command=sh&stdout=1", "admin"); code != http.StatusServiceUnavailable {
		t.Errorf("runtime down: %d %q, want 503", code, body)
	}
}

// A client that goes away mid-stream leaves no goroutine and no
// connection behind.
func TestStreamClientDisconnectFreesEverything(t *testing.T) {
	w, _ := newWorld(t)
	base, _ := newServer(t, w)
	// Warm up the pools (keep-alive readers, the test server's own).
	c, br, _ := upgrade(t, base, "/exec/default/p/c?command=sh&stdout=1")
	_, _ = io.WriteString(c, "x")
	_, _ = br.ReadByte()
	_ = c.Close()
	waitGoroutines(t, -1)
	baseline := runtime.NumGoroutine()
	fds := openFDs(t)
	for range 20 {
		c, br, resp := upgrade(t, base, "/exec/default/p/c?command=sh&stdin=1&stdout=1")
		if resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("status %d", resp.StatusCode)
		}
		_, _ = io.WriteString(c, "x")
		if _, err := br.ReadByte(); err != nil {
			t.Fatal(err)
		}
		_ = c.Close() // mid-stream
	}
	waitGoroutines(t, baseline)
	deadline := time.Now().Add(10 * time.Second)
	for openFDs(t) > fds && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := openFDs(t); n > fds {
		t.Errorf("open files: %d, baseline %d", n, fds)
	}
}

// A stream with no traffic for StreamingIdleTimeout is closed.
func TestStreamIdleTimeout(t *testing.T) {
	w, _ := newWorld(t)
	// The timeout is long beside the 100 ms between messages below, so
	// that a loaded machine's delays do not close the stream early (300 ms
	// did, under load); the stream's deadlines are wall-clock socket
	// deadlines, so no fake clock can stand in.
	const idle = 2 * time.Second
	base, _ := newServer(t, w, func(o *server.Options) { o.StreamingIdleTimeout = idle })
	c, br, resp := upgrade(t, base, "/attach/default/p/c?stdin=1&stdout=1")
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d", resp.StatusCode)
	}
	defer func() { _ = c.Close() }()
	// Traffic keeps it open past the timeout ...
	for range 4 {
		time.Sleep(100 * time.Millisecond)
		if _, err := io.WriteString(c, "k"); err != nil {
			t.Fatal(err)
		}
		if b, err := br.ReadByte(); err != nil || b != 'k' {
			t.Fatalf("echo %q %v", b, err)
		}
	}
	// ... silence closes it.
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("read after idling: %v, want EOF", err)
	}
	if d := time.Since(start); d < idle-100*time.Millisecond {
		t.Errorf("closed after %v, before the idle timeout", d)
	}
}

func TestRun(t *testing.T) {
	w, _ := newWorld(t)
	base, _ := newServer(t, w)
	if code, body := get(t, "POST", base+"/run/default/p/c?cmd=echo+hi", "admin"); code != 200 || body != "[echo hi]" {
		t.Errorf("run: %d %q", code, body)
	}
	if code, body := get(t, "POST", base+"/run/default/p/c?cmd=fail", "admin"); code != 500 || !strings.Contains(body, "exited with 3: outerr") {
		t.Errorf("run fail: %d %q", code, body)
	}
	if code, _ := get(t, "POST", base+"/run/default/p/c", "admin"); code != 400 {
		t.Errorf("run without cmd: %d", code)
	}
}

func waitGoroutines(t *testing.T, baseline int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	last := -1
	for time.Now().Before(deadline) {
		n := runtime.NumGoroutine()
		if baseline < 0 && n == last || baseline >= 0 && n <= baseline {
			return
		}
		last = n
		time.Sleep(50 * time.Millisecond)
	}
	if baseline >= 0 {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines: %d, baseline %d\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
	}
}
