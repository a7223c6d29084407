package imagegc

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// The reason label of image_garbage_collected_total, as the kubelet's.
const (
	ReasonAge   = "age"
	ReasonSpace = "space"
)

// metrics: the kubelet's image_garbage_collected_total{reason}. A nil
// *metrics records nothing.
type metrics struct {
	collected *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, namespace string) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{collected: prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "image_garbage_collected_total",
		Help:      "Total number of images garbage collected by the kubelet, whether through disk usage or image age.",
	}, []string{"reason"})}
	if err := reg.Register(m.collected); err != nil {
		return nil, fmt.Errorf("imagegc: register metrics: %w", err)
	}
	return m, nil
}

func (m *metrics) removed(reason string) {
	if m != nil {
		m.collected.WithLabelValues(reason).Inc()
	}
}
