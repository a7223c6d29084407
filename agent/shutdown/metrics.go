package shutdown

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	podlifemetrics "github.com/podlife/podlife/metrics"
)

// metrics are the kubelet's graceful shutdown gauges. A nil *metrics
// records nothing.
type metrics struct {
	start, end prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, namespace string) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		start: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace,
			Name:      "graceful_shutdown_start_time_seconds",
			Help:      "Last graceful shutdown start time since unix epoch in seconds",
		}),
		end: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace,
			Name:      "graceful_shutdown_end_time_seconds",
			Help:      "Last graceful shutdown end time since unix epoch in seconds",
		}),
	}
	if err := reg.Register(podlifemetrics.Collectors{m.start, m.end}); err != nil {
		return nil, fmt.Errorf("shutdown: register metrics: %w", err)
	}
	return m, nil
}

// set shows the times of a shutdown; a zero time shows as 0.
func (m *metrics) set(start, end time.Time) {
	if m == nil {
		return
	}
	m.start.Set(seconds(start))
	m.end.Set(seconds(end))
}

func seconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / float64(time.Second)
}
