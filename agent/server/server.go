package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// Server is the node's HTTPS API as the kubelet serves it on its port
// 10250: container logs, exec, attach, port-forward, run, the pods, the
// stats summary and resource metrics, behind authentication and
// authorization. Create it with New, bind it with Listen, serve with Run.
type Server struct {
	opts    Options
	log     logr.Logger
	handler http.Handler

	mu sync.Mutex
	ln net.Listener // set by Listen
}

// New validates opts and builds the Server. It opens no socket and starts
// no goroutine.
func New(opts Options) (*Server, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	s := &Server{opts: opts, log: opts.Logger}
	s.handler = s.withAuth(s.routes())
	return s, nil
}

// Handler returns the Server's handler (authentication, authorization and
// every endpoint), for tests and for embedding in another HTTPS server.
func (s *Server) Handler() http.Handler { return s.handler }

// routes maps the kubelet's paths to their handlers.
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.serveHealthz)
	mux.HandleFunc("GET /pods", s.servePods)
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", s.serveContainerLogs)
	for _, m := range []string{"GET", "POST"} {
		mux.HandleFunc(m+" /exec/{namespace}/{pod}/{container}", s.serveExec)
		mux.HandleFunc(m+" /exec/{namespace}/{pod}/{uid}/{container}", s.serveExec)
		mux.HandleFunc(m+" /attach/{namespace}/{pod}/{container}", s.serveAttach)
		mux.HandleFunc(m+" /attach/{namespace}/{pod}/{uid}/{container}", s.serveAttach)
		mux.HandleFunc(m+" /portForward/{namespace}/{pod}", s.servePortForward)
		mux.HandleFunc(m+" /portForward/{namespace}/{pod}/{uid}", s.servePortForward)
	}
	mux.HandleFunc("POST /run/{namespace}/{pod}/{container}", s.serveRun)
	mux.HandleFunc("POST /run/{namespace}/{pod}/{uid}/{container}", s.serveRun)
	mux.HandleFunc("GET /stats/summary", s.serveSummary)
	mux.HandleFunc("GET /metrics/resource", s.serveResourceMetrics)
	if s.opts.Metrics != nil {
		mux.Handle("GET /metrics", s.opts.Metrics)
	}
	return mux
}

// Listen binds the Server's address and port and loads (or makes) its
// certificate; Port then tells the port bound. Run calls it when it was not
// called.
func (s *Server) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return nil
	}
	cfg, err := s.tlsConfig()
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(s.opts.Address, strconv.Itoa(s.opts.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w", addr, err)
	}
	s.ln = tls.NewListener(ln, cfg)
	return nil
}

// Port returns the port the Server listens on, 0 before Listen.
func (s *Server) Port() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return 0
	}
	return s.ln.Addr().(*net.TCPAddr).Port
}

// Close closes the listener of a Server that Listen bound but Run will not
// serve (an agent whose construction failed).
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	err := s.ln.Close()
	s.ln = nil
	return err
}

// Run serves HTTPS until ctx is done, then closes the listener and every
// connection, streams included, and returns nil once every handler has
// returned. It returns an error when the socket cannot be bound or fails.
func (s *Server) Run(ctx context.Context) error {
	if err := s.Listen(); err != nil {
		return err
	}
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	var handlers sync.WaitGroup
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			handlers.Add(1)
			defer handlers.Done()
			s.handler.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	s.log.Info("node server listening", "address", ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("server: %w", err)
	case <-ctx.Done():
	}
	// Close, not Shutdown: hijacked stream connections are closed by
	// their handlers, which watch ctx (BaseContext).
	err := srv.Close()
	handlers.Wait()
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	s.mu.Lock()
	s.ln = nil
	s.mu.Unlock()
	return err
}
