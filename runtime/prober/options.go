package prober

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
)

// Exec runs a command in a running container, as CRI ExecSync does. It is
// what exec probes need of a runtime; (*cri.Runtime).ExecSync satisfies it.
//
// A command that runs and exits non-zero is not an error (exitCode says
// so). A command still running when timeout passes is an error wrapping
// context.DeadlineExceeded or runtime.ErrDeadlineExceeded: the probe fails.
// Any other error (the runtime is down, the container is gone) makes the
// probe's outcome Unknown, which changes nothing.
type Exec interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int32, err error)
}

// ExecFunc adapts a function to Exec.
type ExecFunc func(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int32, err error)

// ExecSync calls f.
func (f ExecFunc) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	return f(ctx, containerID, cmd, timeout)
}

var _ Exec = ExecFunc(nil)

// DefaultUserAgent is the User-Agent of HTTP and gRPC probes, the kubelet's
// for the Kubernetes version podlife follows.
const DefaultUserAgent = "kube-probe/1.37"

// Options configures a Manager.
type Options struct {
	// Exec runs exec probes. Required only for pods with exec probes: without
	// it an exec probe's outcome is Unknown (and it is logged).
	Exec Exec
	// Dialer opens the connections of httpGet, tcpSocket and grpc probes.
	// Default a net.Dialer.
	Dialer func(ctx context.Context, network, address string) (net.Conn, error)
	// HTTPTransport carries httpGet probes. Default: a transport that dials
	// with Dialer, skips TLS verification, uses no proxy and no keep-alives,
	// as the kubelet's. Redirects are followed (at most 10) only to the same
	// host, whatever the transport.
	HTTPTransport http.RoundTripper
	// Probe, when set, runs every probe instead of the built-in handlers
	// (exec, httpGet, tcpSocket and grpc alike): for fake runtimes and
	// simulators whose containers have no process to exec in and no
	// network to dial. Its Result and output count as a built-in probe's
	// (Unknown: the probe could not run, which changes nothing). It is
	// called from the probe goroutines, concurrently, with no lock held,
	// and must return once ctx is done (at the probe's timeout). Exec,
	// Dialer and HTTPTransport are then unused. Default nil.
	Probe func(ctx context.Context, req Request) (Result, string)
	// UserAgent of HTTP and gRPC probes, unless a probe's headers set one.
	// Default DefaultUserAgent.
	UserAgent string
	// OnResult is called on every change of a probe's published result (see
	// Update). It is called from the probe goroutines, concurrently, with no
	// lock held; it should return quickly (enqueue a pod sync). An Update can
	// arrive just after RemovePod returns; ignore it. Default: none.
	OnResult func(Update)
	// OnWarning is called at every probe that succeeded with a warning
	// (the kubelet's probe.Warning, which it records as a ProbeWarning
	// event): an HTTP probe whose redirect to another host was not followed;
	// Output is the kubelet's message, "Probe terminated redirects,
	// Response body: ...". As OnResult, from the probe goroutines with no
	// lock held. Default: none.
	OnWarning func(Update)
	// Logger for probe failures (V(2)) and outcomes (V(4)). Zero value
	// discards.
	Logger logr.Logger
	// Clock schedules probes. Default the real clock.
	Clock clock.WithTicker
	// Rand returns a number in [0,1) that spreads the first probes of the
	// containers that exist when the manager starts over one period, as the
	// kubelet does after a restart. It is called with the manager's lock
	// held: it must only compute. Default math/rand/v2.Float64.
	Rand func() float64
	// Registerer receives prober_probe_total and
	// prober_probe_duration_seconds. Default: none (no metrics).
	Registerer prometheus.Registerer
}

func (o Options) withDefaults() Options {
	if o.Dialer == nil {
		d := &net.Dialer{}
		o.Dialer = d.DialContext
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	if o.HTTPTransport == nil {
		o.HTTPTransport = defaultTransport(o.Dialer)
	}
	return o
}

func (o Options) validate() error {
	if o.UserAgent == "" || o.Clock == nil || o.Rand == nil || o.Dialer == nil || o.HTTPTransport == nil {
		return errors.New("prober: incomplete options")
	}
	return nil
}
