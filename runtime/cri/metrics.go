package cri

import (
	"context"
	"fmt"
	"path"
	"strings"
	"unicode"

	"k8s.io/utils/clock"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	podlifemetrics "github.com/podlife/podlife/metrics"
)

// DefaultMetricsNamespace prefixes the runtime operation metrics, as the
// kubelet's (kubelet_runtime_operations_total...).
const DefaultMetricsNamespace = "kubelet"

// operationTypes are the kubelet's operation_type label values for the CRI
// methods (its instrumented runtime and image services). A method not named
// here gets its name in snake case.
var operationTypes = map[string]string{
	"Version":                  "version",
	"Status":                   "status",
	"RunPodSandbox":            "run_podsandbox",
	"StopPodSandbox":           "stop_podsandbox",
	"RemovePodSandbox":         "remove_podsandbox",
	"PodSandboxStatus":         "podsandbox_status",
	"ListPodSandbox":           "list_podsandbox",
	"PortForward":              "port_forward",
	"CreateContainer":          "create_container",
	"StartContainer":           "start_container",
	"StopContainer":            "stop_container",
	"RemoveContainer":          "remove_container",
	"ListContainers":           "list_containers",
	"ContainerStatus":          "container_status",
	"UpdateContainerResources": "update_container",
	"ReopenContainerLog":       "reopen_container_log",
	"ExecSync":                 "exec_sync",
	"Exec":                     "exec",
	"Attach":                   "attach",
	"ContainerStats":           "container_stats",
	"ListContainerStats":       "list_container_stats",
	"PodSandboxStats":          "podsandbox_stats",
	"ListPodSandboxStats":      "list_podsandbox_stats",
	"UpdateRuntimeConfig":      "update_runtime_config",
	"ListImages":               "list_images",
	"ImageStatus":              "image_status",
	"PullImage":                "pull_image",
	"RemoveImage":              "remove_image",
	"ImageFsInfo":              "image_fs_info",
}

// operationType is the operation_type of a full gRPC method name
// ("/runtime.v1.RuntimeService/RunPodSandbox" gives "run_podsandbox").
func operationType(fullMethod string) string {
	m := path.Base(fullMethod)
	if op, ok := operationTypes[m]; ok {
		return op
	}
	var b strings.Builder
	for i, r := range m {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// operationMetrics are the kubelet's runtime operation metrics: every CRI
// call counted, timed and, when it fails, counted as an error, by
// operation_type. A nil *operationMetrics records nothing.
type operationMetrics struct {
	clock    clock.PassiveClock
	total    *prometheus.CounterVec
	errors   *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newOperationMetrics(reg prometheus.Registerer, namespace string, clk clock.PassiveClock) *operationMetrics {
	if reg == nil {
		return nil
	}
	return &operationMetrics{
		clock: clk,
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "runtime_operations_total",
			Help: "Cumulative number of CRI runtime operations by operation type.",
		}, []string{"operation_type"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "runtime_operations_errors_total",
			Help: "Cumulative number of CRI runtime operation errors by operation type.",
		}, []string{"operation_type"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "runtime_operations_duration_seconds",
			Help:    "Duration in seconds of CRI runtime operations, by operation type.",
			Buckets: prometheus.ExponentialBuckets(.005, 2.5, 14), // the kubelet's: 5 ms .. 2.6 h
		}, []string{"operation_type"}),
	}
}

// register registers the metrics with reg, all or none.
func (m *operationMetrics) register(reg prometheus.Registerer) error {
	if err := reg.Register(podlifemetrics.Collectors{m.total, m.errors, m.duration}); err != nil {
		return fmt.Errorf("cri: register metrics: %w", err)
	}
	return nil
}

// interceptor records every unary call of the connection.
func (m *operationMetrics) interceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start := m.clock.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	op := operationType(method)
	m.total.WithLabelValues(op).Inc()
	m.duration.WithLabelValues(op).Observe(m.clock.Since(start).Seconds())
	if err != nil {
		m.errors.WithLabelValues(op).Inc()
	}
	return err
}
