package metrics

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultNamespace is the namespace used when Options.Namespace is empty. It
// gives the kubelet's metric names, so kubelet dashboards and alerts work
// unchanged.
const DefaultNamespace = "kubelet"

// Options configures New.
type Options struct {
	// Registerer receives the collectors. Required. Pass the registry you
	// serve (for example prometheus.NewRegistry() behind promhttp.HandlerFor);
	// the package never uses the process-wide default Prometheus registry on its own.
	Registerer prometheus.Registerer

	// Namespace is the prefix of every metric name, joined with "_".
	// Default DefaultNamespace ("kubelet"). It must match
	// [a-zA-Z_][a-zA-Z0-9_]*.
	Namespace string
}

func (o Options) withDefaults() Options {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	return o
}

func (o Options) validate() error {
	if o.Registerer == nil {
		return errors.New("metrics: Options.Registerer is required")
	}
	if !validNamespace(o.Namespace) {
		return fmt.Errorf("metrics: invalid Options.Namespace %q: must match [a-zA-Z_][a-zA-Z0-9_]*", o.Namespace)
	}
	return nil
}

// validNamespace reports whether ns is a non-empty legacy Prometheus name
// without colons (colons are reserved for recording rules).
func validNamespace(ns string) bool {
	if ns == "" {
		return false
	}
	for i, r := range ns {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Metrics holds the pod lifecycle metrics of one agent. Its methods are safe
// for concurrent use. A nil *Metrics is valid: every method then does nothing,
// so a component can take an optional *Metrics without checks.
type Metrics struct {
	registerer prometheus.Registerer
	all        Collectors

	desiredPods         *prometheus.GaugeVec
	activePods          *prometheus.GaugeVec
	mirrorPods          prometheus.Gauge
	workingPods         *prometheus.GaugeVec
	restartedPods       *prometheus.CounterVec
	orphanedRuntimePods prometheus.Counter
	podWorkerDuration   *prometheus.HistogramVec
	podWorkerStart      prometheus.Histogram
	containersPerPod    prometheus.Histogram
	sourceRejected      *prometheus.CounterVec
	workingPodKeys      []WorkingPodKey // the 15 valid keys, read-only after New
}

// New creates the metrics and registers them into opts.Registerer, all at
// once: on error nothing is registered. Registering the same names twice into
// one registry fails with an error wrapping prometheus.AlreadyRegisteredError.
//
// New creates every series of the six pod-count metrics at zero (23 series),
// so they are exported before the first housekeeping pass sets them.
func New(opts Options) (*Metrics, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	ns := opts.Namespace
	m := &Metrics{
		registerer: opts.Registerer,
		desiredPods: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns,
			Name:      "desired_pods",
			Help:      "The number of pods the agent is instructed to run. static is \"true\" for pods that do not come from the API server.",
		}, []string{"static"}),
		activePods: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns,
			Name:      "active_pods",
			Help:      "The number of pods the agent considers active, which are taken into account when admitting new pods. static is \"true\" for pods that do not come from the API server.",
		}, []string{"static"}),
		mirrorPods: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: ns,
			Name:      "mirror_pods",
			Help:      "The number of mirror pods the agent will try to create, one per admitted static pod.",
		}),
		workingPods: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns,
			Name:      "working_pods",
			Help: "The number of pods the pod workers actually run, by lifecycle phase (sync, terminating, terminated), " +
				"by whether the pod is desired, orphaned (removed from the configuration or force deleted in the API) " +
				"or known only to the runtime, and by whether it is static. Orphaned pods consume resources that are not visible elsewhere.",
		}, []string{"lifecycle", "config", "static"}),
		restartedPods: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns,
			Name:      "restarted_pods_total",
			Help: "The number of pods restarted because they were deleted and recreated with the same UID while the agent watched them " +
				"(common for static pods, very rare for API pods).",
		}, []string{"static"}),
		orphanedRuntimePods: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns,
			Name:      "orphaned_runtime_pods_total",
			Help: "The number of pods found in the container runtime that the pod workers did not already know. " +
				"This usually means the agent restarted while a pod was being force deleted, which is unusual.",
		}),
		podWorkerDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns,
			Name:      "pod_worker_duration_seconds",
			Help:      "Duration in seconds to sync a single pod, by operation type: create, update, sync, kill or terminated.",
			Buckets:   prometheus.DefBuckets,
		}, []string{"operation_type"}),
		podWorkerStart: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: ns,
			Name:      "pod_worker_start_duration_seconds",
			Help:      "Duration in seconds from the agent first seeing a pod to its pod worker starting.",
			Buckets:   prometheus.DefBuckets,
		}),
		containersPerPod: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: ns,
			Name:      "containers_per_pod_count",
			Help:      "The number of containers per pod, observed when a pod first starts.",
			Buckets:   []float64{1, 2, 4, 8, 16},
		}),
		sourceRejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns,
			Name:      "pod_source_rejected_total",
			Help: "The number of manifests or pods a pod source rejected, by source (file, http, api, ...) and reason " +
				"(decode, not_pod, invalid, duplicate, fetch). A rejected input is counted once per change of its content, not at every re-read.",
		}, []string{"source", "reason"}),
		workingPodKeys: WorkingPodKeys(),
	}
	m.all = Collectors{
		m.desiredPods, m.activePods, m.mirrorPods, m.workingPods,
		m.restartedPods, m.orphanedRuntimePods,
		m.podWorkerDuration, m.podWorkerStart, m.containersPerPod,
		m.sourceRejected,
	}
	m.initSeries()
	// One Register call for everything: it either registers all ten
	// metrics or none, so a failed New leaves the registry as it was.
	if err := opts.Registerer.Register(m.all); err != nil {
		return nil, fmt.Errorf("metrics: register into namespace %q: %w", ns, err)
	}
	return m, nil
}

// initSeries creates the 23 series of the six pod-count metrics at zero.
func (m *Metrics) initSeries() {
	for _, static := range []string{StaticFalse, StaticTrue} {
		m.desiredPods.WithLabelValues(static).Set(0)
		m.activePods.WithLabelValues(static).Set(0)
		m.restartedPods.WithLabelValues(static).Add(0)
	}
	m.mirrorPods.Set(0)
	for _, k := range m.workingPodKeys {
		m.workingPods.WithLabelValues(k.Lifecycle, k.Config, k.Static).Set(0)
	}
	m.orphanedRuntimePods.Add(0)
}

// Unregister removes the metrics from the Registerer given to New, so that
// New can register a fresh set (for example when an agent is restarted inside
// one process). It reports whether they were registered.
func (m *Metrics) Unregister() bool {
	if m == nil {
		return false
	}
	return m.registerer.Unregister(m.all)
}

// Collectors registers several collectors as one, so that registration is
// all or nothing (and Unregister takes them all back): the other metric
// sets of podlife (agent/status, agent/events) register theirs with it.
type Collectors []prometheus.Collector

// Describe implements prometheus.Collector.
func (cs Collectors) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range cs {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (cs Collectors) Collect(ch chan<- prometheus.Metric) {
	for _, c := range cs {
		c.Collect(ch)
	}
}
