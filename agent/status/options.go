package status

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/internal/validate"
)

// PodStates tells the Manager whether a pod may still have running
// containers. The agent's pod workers (podworker.Workers) implement it.
type PodStates interface {
	CouldHaveRunningContainers(uid types.UID) bool
}

// Pods gives the pods as the agent last saw them from the API server (its
// watch of the pods bound to the node). The Manager builds its patches on
// them instead of reading each pod before each write. podmanager.Manager
// implements it.
type Pods interface {
	// GetPodByUID returns the regular or static pod with this UID.
	GetPodByUID(uid types.UID) (*v1.Pod, bool)
	// GetMirrorPodByPod returns the mirror pod of a static pod.
	GetMirrorPodByPod(pod *v1.Pod) (*v1.Pod, bool)
}

// Defaults of Options.
const (
	// DefaultReconcileInterval is the kubelet's syncPeriod: the full
	// reconcile repairs drift this often.
	DefaultReconcileInterval = 10 * time.Second
	// DefaultWorkers bounds the writes in flight. At the kubelet's client
	// limits (QPS 50, burst 100) ten writes in flight keep the rate limiter
	// saturated as long as a write takes under 200 ms (10 / 0.2 s = 50/s);
	// more would only queue inside the rate limiter and hold connections.
	DefaultWorkers = 10
	// DefaultBackoffBase is the first retry delay after a failed write; it
	// doubles with every further failure of the same pod.
	DefaultBackoffBase = 200 * time.Millisecond
	// DefaultBackoffMax caps the retry delay: never longer than the
	// kubelet's syncPeriod, after which the kubelet would write again too.
	DefaultBackoffMax = 10 * time.Second
	// DefaultRequestTimeout bounds one write (PATCH, and the GET and DELETE
	// that may follow), so that an API server that stops answering cannot
	// hold a worker for ever.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultHoldTransient is how long a transient status waits for the
	// next one before it is written (see Options.HoldTransient).
	DefaultHoldTransient = time.Second
	// DefaultMetricsNamespace prefixes the metric names, as the package
	// metrics does: the kubelet's names.
	DefaultMetricsNamespace = "kubelet"
)

// Options configure a Manager.
type Options struct {
	// Client writes the statuses. Required. Give it the kubelet's limits
	// (QPS 50, burst 100); see InstrumentConfig to count its requests.
	Client kubernetes.Interface
	// PodStates says whether a pod could still have running containers.
	// Required.
	PodStates PodStates
	// Pods gives the pods as last seen from the API server, the base of
	// every patch. Default nil: the pods given to SetPodStatus and
	// PodFinished are the base (correct, but a stale base costs a GET on
	// the first conflict).
	Pods Pods

	// Logger: V(2) for pods dropped or deleted, V(4) per write. The zero
	// value discards.
	Logger logr.Logger
	// Clock drives the reconcile ticker and the back-offs. Default: the
	// real clock.
	Clock clock.WithTicker
	// Rand returns a number in [0, 1) for the jitter of the back-offs.
	// It must be safe for concurrent use. Default: math/rand/v2.Float64.
	Rand func() float64

	// ReconcileInterval is the period of the full reconcile. Default
	// DefaultReconcileInterval (10 s).
	ReconcileInterval time.Duration
	// Workers is the number of writes in flight at most. Each write has
	// its own goroutine while it lasts; an idle Manager has none. Default
	// DefaultWorkers (10).
	Workers int
	// BackoffBase and BackoffMax shape the per-pod retry delay after a
	// failed write: BackoffBase·2^(failures-1), at most BackoffMax, plus up
	// to half of it at random. Defaults DefaultBackoffBase (200 ms) and
	// DefaultBackoffMax (10 s).
	BackoffBase, BackoffMax time.Duration
	// RequestTimeout bounds one write. Default DefaultRequestTimeout (30 s).
	RequestTimeout time.Duration
	// HoldTransient is how long a transient status is held back, waiting
	// for the status that follows it, before it is written. Two statuses
	// are transient: a pod's first status while nothing of it has run yet
	// (Pending, every container waiting: the status recorded before the
	// containers are started), and a terminal phase recorded while the pod
	// could still have running containers (written, as the terminal-phase
	// rule wants, without its phase). Either is usually followed within
	// milliseconds by the status that matters (the pod running; the pod
	// finished), and writing only that one saves one request per pod start
	// and per pod stop. A status recorded while the pod is held replaces
	// the held one and is written at once unless it is transient too; the
	// hold never lasts longer than HoldTransient from the first transient
	// status, so a slow image pull still shows ContainerCreating after it.
	// Default DefaultHoldTransient (1 s); negative: no hold (every status is
	// written as soon as a worker is free, as the kubelet does).
	HoldTransient time.Duration

	// Registerer receives the metrics (see doc.go). Default nil: no
	// metrics.
	Registerer prometheus.Registerer
	// MetricsNamespace prefixes the metric names. Default
	// DefaultMetricsNamespace ("kubelet").
	MetricsNamespace string
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	if o.ReconcileInterval == 0 {
		o.ReconcileInterval = DefaultReconcileInterval
	}
	if o.Workers == 0 {
		o.Workers = DefaultWorkers
	}
	if o.BackoffBase == 0 {
		o.BackoffBase = DefaultBackoffBase
	}
	if o.BackoffMax == 0 {
		o.BackoffMax = DefaultBackoffMax
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.HoldTransient == 0 {
		o.HoldTransient = DefaultHoldTransient
	}
	if o.MetricsNamespace == "" {
		o.MetricsNamespace = DefaultMetricsNamespace
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.Client == nil {
		errs = append(errs, errors.New("Client is required"))
	}
	if o.PodStates == nil {
		errs = append(errs, errors.New("PodStates is required"))
	}
	errs = append(errs, validate.Durations(validate.Field("ReconcileInterval", o.ReconcileInterval), validate.Field("RequestTimeout", o.RequestTimeout))...)
	if o.Workers < 0 {
		errs = append(errs, fmt.Errorf("Workers %d is negative", o.Workers))
	}
	if o.BackoffBase < 0 || o.BackoffMax < o.BackoffBase {
		errs = append(errs, fmt.Errorf("BackoffBase %v and BackoffMax %v: want 0 <= base <= max", o.BackoffBase, o.BackoffMax))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("status: invalid Options: %w", err)
	}
	return nil
}
