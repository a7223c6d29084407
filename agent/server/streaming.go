package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/proxy"
)

// serveExec answers /exec/{namespace}/{pod}[/{uid}]/{container}: the
// runtime's streaming URL for the command (query "command", repeated), the
// client's upgraded connection proxied to it.
func (s *Server) serveExec(w http.ResponseWriter, r *http.Request) {
	opts, err := streamOptions(r)
	if err != nil {
		writeError(w, err)
		return
	}
	cmd := r.URL.Query()["command"]
	if len(cmd) == 0 {
		writeError(w, errorf(http.StatusBadRequest, "no command given (query parameter command)"))
		return
	}
	s.stream(w, r, "exec", func(ctx context.Context, st Streaming) (*url.URL, error) {
		_, id, err := s.runningContainer(r)
		if err != nil {
			return nil, err
		}
		return st.GetExec(ctx, id, cmd, opts.stdin, opts.stdout, opts.stderr, opts.tty)
	})
}

// serveAttach answers /attach/{namespace}/{pod}[/{uid}]/{container}.
func (s *Server) serveAttach(w http.ResponseWriter, r *http.Request) {
	opts, err := streamOptions(r)
	if err != nil {
		writeError(w, err)
		return
	}
	s.stream(w, r, "attach", func(ctx context.Context, st Streaming) (*url.URL, error) {
		_, id, err := s.runningContainer(r)
		if err != nil {
			return nil, err
		}
		return st.GetAttach(ctx, id, opts.stdin, opts.stdout, opts.stderr, opts.tty)
	})
}

// servePortForward answers /portForward/{namespace}/{pod}[/{uid}]; the
// ports come in the query ("port", repeated, for WebSocket clients) or in
// the streams' headers (SPDY), which the runtime reads.
func (s *Server) servePortForward(w http.ResponseWriter, r *http.Request) {
	var ports []int32
	for _, p := range r.URL.Query()["port"] {
		for _, f := range strings.Split(p, ",") {
			n, err := strconv.ParseUint(f, 10, 16)
			if err != nil || n == 0 {
				writeError(w, errorf(http.StatusBadRequest, "port %q is not a valid port", f))
				return
			}
			ports = append(ports, int32(n))
		}
	}
	s.stream(w, r, "portForward", func(ctx context.Context, st Streaming) (*url.URL, error) {
		pod, err := s.findPod(r.PathValue("namespace"), r.PathValue("pod"), types.UID(r.PathValue("uid")))
		if err != nil {
			return nil, err
		}
		return st.GetPortForward(ctx, pod.UID, ports)
	})
}

// stream asks the runtime for the session's URL and proxies the upgraded
// connection to it, as the kubelet does, closing it after
// StreamingIdleTimeout without traffic or when the Server stops.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, kind string, getURL func(context.Context, Streaming) (*url.URL, error)) {
	if s.opts.Streaming == nil {
		writeError(w, errorf(http.StatusNotImplemented, "this node's runtime serves no %s", kind))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.RuntimeRequestTimeout)
	u, err := getURL(ctx, s.opts.Streaming)
	cancel()
	if err != nil {
		writeError(w, fmt.Errorf("%s: %w", kind, err))
		return
	}
	if !httpstream.IsUpgradeRequest(r) {
		writeError(w, errorf(http.StatusBadRequest, "Upgrade request required"))
		return
	}
	s.log.V(2).Info("streaming", "kind", kind, "path", r.URL.Path)
	h := proxy.NewUpgradeAwareHandler(u, nil, false, true, proxyResponder{w: w})
	h.ServeHTTP(idleHijacker{ResponseWriter: w, ctx: r.Context(), timeout: s.opts.StreamingIdleTimeout}, r)
}

// proxyResponder answers an error met before the connection was
// upgraded.
type proxyResponder struct{ w http.ResponseWriter }

func (p proxyResponder) Error(_ http.ResponseWriter, _ *http.Request, err error) {
	http.Error(p.w, fmt.Sprintf("streaming: %v", err), http.StatusInternalServerError)
}

// streamOpts are the streams of an exec or attach session.
type streamOpts struct{ stdin, stdout, stderr, tty bool }

// streamOptions reads the streams as the API server sends them to a
// kubelet (input, output, error, tty = "1") or as a client names them
// (stdin, stdout, stderr, "true" too): a TTY has no separate stderr, and
// one stream at least.
func streamOptions(r *http.Request) (streamOpts, error) {
	q := r.URL.Query()
	on := func(names ...string) bool {
		for _, n := range names {
			if v := q.Get(n); v == "1" || v == "true" {
				return true
			}
		}
		return false
	}
	o := streamOpts{stdin: on("input", "stdin"), stdout: on("output", "stdout"), stderr: on("error", "stderr"), tty: on("tty")}
	if o.tty {
		o.stderr = false
	}
	if !o.stdin && !o.stdout && !o.stderr {
		return o, errorf(http.StatusBadRequest, "you must specify at least 1 of stdin, stdout, stderr")
	}
	return o, nil
}

// serveRun answers /run/{namespace}/{pod}[/{uid}]/{container}?cmd=...: the
// command's output (stdout then stderr), as the kubelet's RunInContainer.
func (s *Server) serveRun(w http.ResponseWriter, r *http.Request) {
	if s.opts.Commands == nil {
		writeError(w, errorf(http.StatusNotImplemented, "this node's runtime runs no commands"))
		return
	}
	cmd := strings.Fields(r.URL.Query().Get("cmd"))
	if len(cmd) == 0 {
		writeError(w, errorf(http.StatusBadRequest, "no command given (query parameter cmd)"))
		return
	}
	_, id, err := s.runningContainer(r)
	if err != nil {
		writeError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.RuntimeRequestTimeout)
	defer cancel()
	stdout, stderr, code, err := s.opts.Commands.ExecSync(ctx, id, cmd, 0)
	if err != nil {
		writeError(w, fmt.Errorf("run %q: %w", cmd, err))
		return
	}
	out := append(stdout, stderr...)
	if code != 0 {
		writeError(w, fmt.Errorf("command '%s' exited with %d: %s", strings.Join(cmd, " "), code, out))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}
