package logrotate

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	podlifemetrics "github.com/podlife/podlife/metrics"
)

// metrics count rotations and failures. A nil *metrics records nothing.
type metrics struct {
	rotations, failures prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, namespace string) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		rotations: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "container_log_rotations_total",
			Help:      "Number of container log files rotated.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "container_log_rotation_failures_total",
			Help:      "Number of container log checks or rotations that failed (each is retried at the next pass).",
		}),
	}
	if err := reg.Register(podlifemetrics.Collectors{m.rotations, m.failures}); err != nil {
		return nil, fmt.Errorf("logrotate: register metrics: %w", err)
	}
	return m, nil
}

func (m *metrics) rotatedLog() {
	if m != nil {
		m.rotations.Inc()
	}
}

func (m *metrics) failed() {
	if m != nil {
		m.failures.Inc()
	}
}
