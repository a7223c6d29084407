package eviction

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	podlifemetrics "github.com/podlife/podlife/metrics"
)

// metrics count evictions and time the passes. A nil *metrics records
// nothing.
type metrics struct {
	evictions *prometheus.CounterVec
	passes    prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, namespace string) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "evictions",
			Help:      "Cumulative number of pod evictions by eviction signal.",
		}, []string{"eviction_signal"}),
		passes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace,
			Name:      "eviction_pass_duration_seconds",
			Help:      "Duration in seconds of the eviction manager's passes.",
			Buckets:   prometheus.ExponentialBuckets(0.0005, 4, 9),
		}),
	}
	if err := reg.Register(podlifemetrics.Collectors{m.evictions, m.passes}); err != nil {
		return nil, fmt.Errorf("eviction: register metrics: %w", err)
	}
	return m, nil
}

func (m *metrics) evicted(signal string) {
	if m != nil {
		m.evictions.WithLabelValues(signal).Inc()
	}
}

func (m *metrics) observePass(d time.Duration) {
	if m != nil {
		m.passes.Observe(d.Seconds())
	}
}
