package gc

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	podlifemetrics "github.com/podlife/podlife/metrics"
)

// Object kinds, the label "object" of the metrics.
const (
	objectContainer = "container"
	objectSandbox   = "sandbox"
	objectPodFolder = "pod_folder"
)

// metrics count removals, failures and passes. A nil *metrics records
// nothing.
type metrics struct {
	removals, failures *prometheus.CounterVec
	duration           prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, namespace string) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		removals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "container_gc_removals_total",
			Help:      "Number of dead containers, sandboxes and orphaned pod folders removed by container garbage collection, by object.",
		}, []string{"object"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "container_gc_failures_total",
			Help:      "Number of removals by container garbage collection that failed (each is retried at the next pass), by object.",
		}, []string{"object"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace,
			Name:      "container_gc_duration_seconds",
			Help:      "Duration in seconds of the container garbage collection passes.",
			Buckets:   prometheus.ExponentialBuckets(0.001, 4, 10),
		}),
	}
	for _, o := range []string{objectContainer, objectSandbox, objectPodFolder} {
		m.removals.WithLabelValues(o)
		m.failures.WithLabelValues(o)
	}
	if err := reg.Register(podlifemetrics.Collectors{m.removals, m.failures, m.duration}); err != nil {
		return nil, fmt.Errorf("gc: register metrics: %w", err)
	}
	return m, nil
}

func (m *metrics) removed(object string) {
	if m != nil {
		m.removals.WithLabelValues(object).Inc()
	}
}

func (m *metrics) failed(object string) {
	if m != nil {
		m.failures.WithLabelValues(object).Inc()
	}
}

func (m *metrics) pass(seconds float64) {
	if m != nil {
		m.duration.Observe(seconds)
	}
}
