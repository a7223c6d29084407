package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/agent/imagegc"
	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// openRuntime connects to the CRI endpoint, or starts an embedded fakecri
// server when there is none; podNetwork selects cri.NetworkModePod. close releases both. reg, when not nil,
// receives the runtime operation metrics.
func openRuntime(endpoint string, podNetwork bool, log logr.Logger, reg prometheus.Registerer, edits ...func(*cri.Options)) (rt *cri.Runtime, srv *fakecri.Server, closeFn func(), err error) {
	opts := cri.Options{Endpoint: endpoint, Logger: log.WithName("cri"), Registerer: reg}
	for _, edit := range edits {
		edit(&opts)
	}
	if podNetwork {
		opts.NetworkMode = cri.NetworkModePod
	}
	if endpoint == "" {
		srv = fakecri.New(fakecri.Options{Logger: log.WithName("fakecri")})
		if err := srv.StartInMemory(); err != nil {
			return nil, nil, nil, fmt.Errorf("start embedded runtime: %w", err)
		}
		// No transport: the calls run fakecri's handlers directly.
		opts.Endpoint, opts.Conn = "embedded-fakecri", srv.Conn()
	}
	rt, err = cri.New(opts)
	if err != nil {
		if srv != nil {
			srv.Stop()
		}
		return nil, nil, nil, err
	}
	return rt, srv, func() {
		_ = rt.Close()
		if srv != nil {
			srv.Stop()
		}
	}, nil
}

// serve runs the agent and its HTTP endpoints until ctx is done.
func serve(ctx context.Context, c config, log logr.Logger) error {
	return serveWith(ctx, c, log, nil)
}

// serveWith is serve; a signal on shutdownSigs shuts the node down
// gracefully (shutdown.go), after which serveWith returns.
func serveWith(ctx context.Context, c config, log logr.Logger, shutdownSigs <-chan os.Signal) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	rt, fake, closeRuntime, err := openRuntime(c.criEndpoint, c.podNetwork, log, reg, c.runtimeRoot)
	if err != nil {
		return err
	}
	defer closeRuntime()
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	v, err := rt.Version(vctx)
	cancel()
	if err != nil {
		return fmt.Errorf("runtime %s: %w", displayEndpoint(c.criEndpoint), err)
	}
	log.Info("runtime connected", "endpoint", displayEndpoint(c.criEndpoint), "runtime", v.RuntimeName, "version", v.RuntimeVersion)
	if _, err := os.Stat(c.manifests); err != nil {
		log.Info("manifest folder not readable yet; watching for it", "path", c.manifests, "error", err.Error())
	}

	opts := agent.Options{
		Runtime:      rt,
		NodeName:     c.nodeName,
		ManifestPath: c.manifests,
		Registerer:   reg,
		Logger:       log.WithName("agent"),

		ContainerLogMaxSize:  c.containerLogMaxSize,
		ContainerLogMaxFiles: c.containerLogMaxFiles,

		ContainerGCPeriod:           c.containerGCPeriod,
		ImageGCHighThresholdPercent: c.imageGCHighThreshold,
		ImageGCLowThresholdPercent:  c.imageGCLowThreshold,
		ImageMinimumGCAge:           minimumGCAge(c.imageMinimumGCAge),
		ImageMaximumGCAge:           c.imageMaximumGCAge,
		Eviction:                    c.eviction,
	}
	if fake != nil {
		// The embedded runtime's images live in memory: its fake image
		// file system (fakecri's capacity, its images' sizes).
		opts.ImageFsStats = fakeImageFs(fake)
	}
	opts.ContainerGCPolicy, opts.ContainerGCKeepNoDeadInstance = containerGCPolicy(c)
	for _, s := range strings.Split(c.allowedUnsafeSysctls, ",") {
		if s = strings.TrimSpace(s); s != "" {
			opts.AllowedUnsafeSysctls = append(opts.AllowedUnsafeSysctls, s)
		}
	}
	var client kubernetes.Interface
	if c.kubeconfig != "" || c.inCluster {
		var events kubernetes.Interface
		var host string
		client, events, host, err = clusterClients(ctx, c.kubeconfig, c.nodeName, c.kubeAPIQPS, c.kubeAPIBurst, reg)
		if err != nil {
			return err
		}
		withCluster(&opts, c, client, events)
		log.Info("joining a cluster", "server", host, "node", c.nodeName, "qps", c.kubeAPIQPS, "burst", c.kubeAPIBurst)
	}
	if err := withNodeFiles(&opts, c); err != nil {
		return err
	}
	if len(c.configIgnored) > 0 {
		log.Info("--config: fields not used", "fields", c.configIgnored)
	}
	if opts.Server, err = serverOptions(c, client, promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})); err != nil {
		return fmt.Errorf("node server: %w", err)
	}
	a, err := agent.New(opts)
	if err != nil {
		return err
	}
	if s := a.Server(); s != nil {
		log.Info("node server", "address", c.address, "port", s.Port(), "authorization", c.authorizationMode)
	}

	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: newMux(a, reg), ReadHeaderTimeout: 5 * time.Second}
	log.Info("serving", "address", "http://"+ln.Addr().String(), "endpoints", "/metrics /healthz /debug/pods")

	var wg sync.WaitGroup
	httpErr := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			httpErr <- err
		}
	}()
	runCtx, stopAgent := context.WithCancel(ctx)
	defer stopAgent()
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case err := <-httpErr:
			log.Error(err, "http server failed")
			stopAgent()
		case <-runCtx.Done():
		}
	}()
	if shutdownSigs != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			handleShutdownSignals(runCtx, shutdownSigs, a, stopAgent, log)
		}()
	}
	runErr := a.Run(runCtx)
	stopAgent()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	wg.Wait()
	log.Info("shut down")
	return runErr
}

func displayEndpoint(e string) string {
	if e == "" {
		return "embedded fakecri"
	}
	return e
}

// newMux serves /metrics, /healthz and /debug/pods.
func newMux(a *agent.Agent, reg *prometheus.Registry) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !a.SourcesReady() {
			http.Error(w, "starting: pod sources not read yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /debug/pods", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(debugPods(a.Pods()))
	})
	return mux
}

// debugPod is one pod of /debug/pods: the agent's view plus a readable time
// in state.
type debugPod struct {
	agent.PodView
	TimeInState string `json:"timeInState,omitempty"`
}

func debugPods(views []agent.PodView) []debugPod {
	out := make([]debugPod, 0, len(views))
	for _, v := range views {
		d := debugPod{PodView: v}
		if v.TimeInState > 0 {
			d.TimeInState = v.TimeInState.Round(time.Millisecond).String()
		}
		out = append(out, d)
	}
	return out
}

var _ runtime.Runtime = (*cri.Runtime)(nil)

// minimumGCAge turns --image-minimum-gc-age 0 (no minimum) into
// agent.Options' "none" (negative; its zero means the default).
func minimumGCAge(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// fakeImageFs is the embedded fakecri's image file system, for image
// garbage collection.
func fakeImageFs(srv *fakecri.Server) imagegc.StatsFunc {
	return func(context.Context) (imagegc.FsStats, error) {
		capacity, used := srv.ImageFsStats()
		return imagegc.FsStats{Mountpoint: "embedded-fakecri", CapacityBytes: capacity,
			AvailableBytes: capacity - min(used, capacity), UsedBytes: used}, nil
	}
}
