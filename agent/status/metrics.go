package status

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podlife/podlife/metrics"
)

// managerMetrics are the Manager's metrics. A nil *managerMetrics does
// nothing.
type managerMetrics struct {
	writes     *prometheus.CounterVec
	latency    prometheus.Histogram
	queue      prometheus.GaugeFunc
	drops      *prometheus.CounterVec
	deletions  prometheus.Counter
	reconciles prometheus.Counter
}

func newManagerMetrics(reg prometheus.Registerer, ns string, queueLength func() float64) (*managerMetrics, error) {
	m := &managerMetrics{
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns,
			Name:      "status_writes_total",
			Help: "Pod status writes by result: written (one PATCH), unchanged (the API server had it, no request), " +
				"no_mirror (a static pod without mirror pod yet), gone (the pod is gone, dropped) or error (retried after a back-off).",
		}, []string{"result"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: ns,
			Name:      "status_write_duration_seconds",
			Help:      "Duration in seconds of one pod status write, requests and retries on conflict included.",
			Buckets:   []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}),
		queue: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: ns,
			Name:      "status_queue_length",
			Help:      "The number of pods whose status waits to be written: queued, held (a transient status) or backing off after an error.",
		}, queueLength),
		drops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns,
			Name:      "status_pods_dropped_total",
			Help: "Pods whose status is no longer written because their API object is gone, by reason: " +
				"not_found, forbidden (the Node authorizer's answer for a pod gone or bound elsewhere) or uid_changed.",
		}, []string{"reason"}),
		deletions: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns,
			Name:      "status_pod_deletions_total",
			Help:      "Finished pods being deleted that the status manager deleted from the API server (grace period 0).",
		}),
		reconciles: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns,
			Name:      "status_reconcile_writes_total",
			Help:      "Pods the periodic reconcile queued because their status in the API server differed (drift repaired).",
		}),
	}
	for _, r := range []string{ResultWritten, ResultUnchanged, ResultNoMirror, ResultGone, ResultError} {
		m.writes.WithLabelValues(r)
	}
	for _, r := range []string{GoneNotFound, GoneForbidden, GoneUIDChanged} {
		m.drops.WithLabelValues(r)
	}
	if err := reg.Register(metrics.Collectors{m.writes, m.latency, m.queue, m.drops, m.deletions, m.reconciles}); err != nil {
		return nil, fmt.Errorf("status: register metrics into namespace %q: %w", ns, err)
	}
	return m, nil
}

func (m *managerMetrics) observeWrite(result string, d time.Duration) {
	if m == nil {
		return
	}
	m.writes.WithLabelValues(result).Inc()
	if result != ResultUnchanged && result != ResultNoMirror {
		m.latency.Observe(d.Seconds())
	}
}

func (m *managerMetrics) dropped(reason string) {
	if m != nil {
		m.drops.WithLabelValues(reason).Inc()
	}
}

func (m *managerMetrics) deleted() {
	if m != nil {
		m.deletions.Inc()
	}
}

func (m *managerMetrics) reconciled(n int) {
	if m != nil {
		m.reconciles.Add(float64(n))
	}
}
