package server

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// The kubelet's /metrics/resource series, which metrics-server reads.
var (
	nodeCPUDesc = prometheus.NewDesc("node_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the node in core-seconds", nil, nil)
	nodeMemDesc = prometheus.NewDesc("node_memory_working_set_bytes",
		"Current working set of the node in bytes", nil, nil)
	containerCPUDesc = prometheus.NewDesc("container_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the container in core-seconds", []string{"container", "pod", "namespace"}, nil)
	containerMemDesc = prometheus.NewDesc("container_memory_working_set_bytes",
		"Current working set of the container in bytes", []string{"container", "pod", "namespace"}, nil)
	containerStartDesc = prometheus.NewDesc("container_start_time_seconds",
		"Start time of the container since unix epoch in seconds", []string{"container", "pod", "namespace"}, nil)
	podCPUDesc = prometheus.NewDesc("pod_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the pod in core-seconds", []string{"pod", "namespace"}, nil)
	podMemDesc = prometheus.NewDesc("pod_memory_working_set_bytes",
		"Current working set of the pod in bytes", []string{"pod", "namespace"}, nil)
	scrapeErrorDesc = prometheus.NewDesc("scrape_error",
		"1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
	resourceScrapeErrorDesc = prometheus.NewDesc("resource_scrape_error",
		"1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
)

// serveResourceMetrics answers /metrics/resource from one summary. A pod
// stats error is scrape_error 1, the node's figures still served, as the
// kubelet.
func (s *Server) serveResourceMetrics(w http.ResponseWriter, r *http.Request) {
	sum, nodeErr, podErr := s.summary(r.Context())
	if podErr != nil {
		s.log.V(2).Info("resource metrics without pod stats", "err", podErr.Error())
	}
	if nodeErr != nil {
		s.log.V(2).Info("resource metrics without node stats", "err", nodeErr.Error())
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(resourceCollector{sum: sum, failed: podErr != nil || nodeErr != nil})
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
}

// resourceCollector turns one summary into the series.
type resourceCollector struct {
	sum    statsapi.Summary
	failed bool
}

func (c resourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nodeCPUDesc, nodeMemDesc, containerCPUDesc, containerMemDesc,
		containerStartDesc, podCPUDesc, podMemDesc, scrapeErrorDesc, resourceScrapeErrorDesc} {
		ch <- d
	}
}

func (c resourceCollector) Collect(ch chan<- prometheus.Metric) {
	failed := 0.0
	if c.failed {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(scrapeErrorDesc, prometheus.GaugeValue, failed)
	ch <- prometheus.MustNewConstMetric(resourceScrapeErrorDesc, prometheus.GaugeValue, failed)
	cpu(ch, nodeCPUDesc, c.sum.Node.CPU)
	mem(ch, nodeMemDesc, c.sum.Node.Memory)
	for _, p := range c.sum.Pods {
		ns, pod := p.PodRef.Namespace, p.PodRef.Name
		cpu(ch, podCPUDesc, p.CPU, pod, ns)
		mem(ch, podMemDesc, p.Memory, pod, ns)
		for _, ct := range p.Containers {
			cpu(ch, containerCPUDesc, ct.CPU, ct.Name, pod, ns)
			mem(ch, containerMemDesc, ct.Memory, ct.Name, pod, ns)
			if !ct.StartTime.IsZero() {
				ch <- prometheus.MustNewConstMetric(containerStartDesc, prometheus.GaugeValue,
					float64(ct.StartTime.UnixNano())/float64(time.Second), ct.Name, pod, ns)
			}
		}
	}
}

func cpu(ch chan<- prometheus.Metric, d *prometheus.Desc, s *statsapi.CPUStats, labels ...string) {
	if s == nil || s.UsageCoreNanoSeconds == nil {
		return
	}
	m := prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(*s.UsageCoreNanoSeconds)/float64(time.Second), labels...)
	ch <- prometheus.NewMetricWithTimestamp(s.Time.Time, m)
}

func mem(ch chan<- prometheus.Metric, d *prometheus.Desc, s *statsapi.MemoryStats, labels ...string) {
	if s == nil || s.WorkingSetBytes == nil {
		return
	}
	m := prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(*s.WorkingSetBytes), labels...)
	ch <- prometheus.NewMetricWithTimestamp(s.Time.Time, m)
}
