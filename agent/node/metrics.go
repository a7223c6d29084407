package node

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	podlifemetrics "github.com/podlife/podlife/metrics"
)

// metrics are the Controller's counters; a nil *metrics counts nothing.
type metrics struct {
	statusWrites  *prometheus.CounterVec
	leaseRenewals *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, ns string) (*metrics, error) {
	m := &metrics{
		statusWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "node_status_updates_total",
			Help: "Node status updates, by result (success: written; error: reading or writing the Node failed).",
		}, []string{"result"}),
		leaseRenewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "node_lease_renewals_total",
			Help: "Renewals of the node's Lease in kube-node-lease, by result (success, error).",
		}, []string{"result"}),
	}
	if err := reg.Register(podlifemetrics.Collectors{m.statusWrites, m.leaseRenewals}); err != nil {
		return nil, fmt.Errorf("node: register metrics: %w", err)
	}
	return m, nil
}

func (m *metrics) statusWrite(result string) {
	if m != nil {
		m.statusWrites.WithLabelValues(result).Inc()
	}
}

func (m *metrics) leaseRenewal(result string) {
	if m != nil {
		m.leaseRenewals.WithLabelValues(result).Inc()
	}
}
