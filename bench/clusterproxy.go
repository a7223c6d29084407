package bench

import (
	"github.com/podlife/podlife/agent/status"

	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
)

// CountingProxy is a plain-HTTP reverse proxy on localhost in front of the
// API server. It forwards every request with one user's credentials (a node's
// client certificate) and counts the requests, so that an engine run as a
// separate process (the nodeagent, the hollow kubelet) has its own API
// requests counted exactly, whatever else talks to the same API server.
type CountingProxy struct {
	URL string // http://127.0.0.1:PORT

	srv    *http.Server
	mu     sync.Mutex
	by     map[string]int // "VERB resource[/subresource]"
	failed map[string]int // "VERB resource[/subresource] CODE", codes 400 and above
	delay  atomic.Int64   // nanoseconds each request waits before it is forwarded
}

// SetDelay makes each request wait d before it is forwarded (0: none): an
// API server that has slowed down, as its clients see it. A watch waits
// once, before it starts.
func (p *CountingProxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// StartCountingProxy starts a proxy that forwards to upstream's host with
// upstream's credentials. Close stops it.
func StartCountingProxy(upstream *rest.Config) (*CountingProxy, error) {
	rt, err := rest.TransportFor(upstream)
	if err != nil {
		return nil, fmt.Errorf("proxy transport: %w", err)
	}
	target, err := url.Parse(upstream.Host)
	if err != nil {
		return nil, fmt.Errorf("proxy upstream %q: %w", upstream.Host, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy listen: %w", err)
	}
	p := &CountingProxy{URL: "http://" + ln.Addr().String(), by: make(map[string]int), failed: make(map[string]int)}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport:     rt,
		FlushInterval: -1,
		// An API server away is counted (502 in Failed), not logged for
		// each request.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := p.count(r)
		if d := time.Duration(p.delay.Load()); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		sw := &statusWriter{ResponseWriter: w}
		rp.ServeHTTP(sw, r)
		if sw.code >= 400 {
			p.mu.Lock()
			p.failed[k+" "+strconv.Itoa(sw.code)]++
			p.mu.Unlock()
		}
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// requestKey names a request as "VERB resource[/subresource]" with the
// verbs and resources of the agent's own request counter
// (status.RequestVerb), so that the proxy's counts and the agent's agree.
func requestKey(r *http.Request) string {
	verb, res := status.RequestVerb(r)
	if res == "" {
		res = r.URL.Path
	}
	return verb + " " + res
}

func (p *CountingProxy) count(r *http.Request) string {
	k := requestKey(r)
	p.mu.Lock()
	p.by[k]++
	p.mu.Unlock()
	return k
}

// statusWriter remembers the status code of a response.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Flush lets the reverse proxy stream watches through.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Snapshot returns the counts so far, by "verb resource".
func (p *CountingProxy) Snapshot() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := make(map[string]int, len(p.by))
	for k, v := range p.by {
		m[k] = v
	}
	return m
}

// Failed returns the requests answered with a status code of 400 or
// above so far, by "verb resource code".
func (p *CountingProxy) Failed() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := make(map[string]int, len(p.failed))
	for k, v := range p.failed {
		m[k] = v
	}
	return m
}

// Diff returns after minus before, and its total.
func Diff(before, after map[string]int) (map[string]int, int) {
	d := make(map[string]int)
	total := 0
	for k, v := range after {
		if n := v - before[k]; n != 0 {
			d[k] = n
			total += n
		}
	}
	return d, total
}

// FormatCounts prints counts as "verb resource=N, ..." sorted by key.
func FormatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%d", k, m[k])
	}
	return b.String()
}

// WriteKubeconfig writes a kubeconfig without credentials pointing at the
// proxy, for an engine run as a process.
func (p *CountingProxy) WriteKubeconfig(path string) error {
	const tmpl = `apiVersion: v1
kind: Config
clusters:
- name: proxy
  cluster:
    server: %s
contexts:
- name: proxy
  context:
    cluster: proxy
    user: proxy
current-context: proxy
users:
- name: proxy
  user: {}
`
	return os.WriteFile(path, []byte(fmt.Sprintf(tmpl, p.URL)), 0o600)
}

// Config returns a rest.Config without credentials pointing at the proxy.
func (p *CountingProxy) Config() *rest.Config { return &rest.Config{Host: p.URL} }

// Close stops the proxy.
func (p *CountingProxy) Close(ctx context.Context) error {
	if err := p.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = p.srv.Close()
	}
	return nil
}
