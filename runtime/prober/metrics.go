package prober

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	podlifemetrics "github.com/podlife/podlife/metrics"
	"k8s.io/apimachinery/pkg/types"
)

// metrics are the kubelet's prober metrics, with its names and labels. A nil
// *metrics records nothing.
type metrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "prober",
			Name:      "probe_total",
			Help:      "Cumulative number of liveness, readiness or startup probes of a container, by result.",
		}, []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "prober",
			Name:      "probe_duration_seconds",
			Help:      "Duration in seconds of a liveness, readiness or startup probe of a container.",
			Buckets:   prometheus.ExponentialBuckets(0.001, 4, 8), // 1 ms .. 16 s
		}, []string{"probe_type", "container", "pod", "namespace"}),
	}
	if err := reg.Register(podlifemetrics.Collectors{m.total, m.duration}); err != nil {
		return nil, fmt.Errorf("prober: register metrics: %w", err)
	}
	return m, nil
}

// probeMetrics are one worker's series. The counters (by pod UID) are
// looked up once; the duration series is looked up at each probe, because it
// is keyed by pod name and a pod of the same name removed meanwhile deletes
// it.
type probeMetrics struct {
	successful, failed, unknown prometheus.Counter
	duration                    *prometheus.HistogramVec
	durationLabels              []string
}

func (m *metrics) forProbe(t ProbeType, container, pod, namespace string, uid types.UID) *probeMetrics {
	if m == nil {
		return nil
	}
	pt := t.String()
	return &probeMetrics{
		successful:     m.total.WithLabelValues(pt, "successful", container, pod, namespace, string(uid)),
		failed:         m.total.WithLabelValues(pt, "failed", container, pod, namespace, string(uid)),
		unknown:        m.total.WithLabelValues(pt, "unknown", container, pod, namespace, string(uid)),
		duration:       m.duration,
		durationLabels: []string{pt, container, pod, namespace},
	}
}

func (pm *probeMetrics) observe(r Result, seconds float64) {
	if pm == nil {
		return
	}
	switch r {
	case Success:
		pm.successful.Inc()
	case Failure:
		pm.failed.Inc()
	default:
		pm.unknown.Inc()
	}
	pm.duration.WithLabelValues(pm.durationLabels...).Observe(seconds)
}

// forget drops the series of a removed pod.
func (m *metrics) forget(uid types.UID, pod, namespace string) {
	if m == nil {
		return
	}
	m.total.DeletePartialMatch(prometheus.Labels{"pod_uid": string(uid)})
	m.duration.DeletePartialMatch(prometheus.Labels{"pod": pod, "namespace": namespace})
}
