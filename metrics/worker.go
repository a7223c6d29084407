package metrics

import "time"

// The observers in this file are called by the pod workers. The podworker
// package does not import this one: it accepts any value with the methods
// ObservePodWorkerDuration and ObserveContainersPerPod, which *Metrics has.

// ObservePodWorkerDuration records in pod_worker_duration_seconds{operation_type}
// how long one sync of a pod took. operation should be one of the Operation*
// constants; any other value is recorded as OperationUnknown.
func (m *Metrics) ObservePodWorkerDuration(operation string, d time.Duration) {
	if m == nil {
		return
	}
	m.podWorkerDuration.WithLabelValues(operationLabel(operation)).Observe(d.Seconds())
}

// ObservePodWorkerStartDuration records in pod_worker_start_duration_seconds
// the time from the agent first seeing a pod (its config.seen annotation) to
// its worker starting.
func (m *Metrics) ObservePodWorkerStartDuration(d time.Duration) {
	if m == nil {
		return
	}
	m.podWorkerStart.Observe(d.Seconds())
}

// ObserveContainersPerPod records in containers_per_pod_count the number of
// containers of a pod, once, when its worker first starts it.
func (m *Metrics) ObserveContainersPerPod(n int) {
	if m == nil {
		return
	}
	m.containersPerPod.Observe(float64(n))
}

// CountPodSourceRejected counts one input that a pod source rejected, by
// source name and reason (see the pod_source_rejected_total help).
func (m *Metrics) CountPodSourceRejected(source, reason string) {
	if m == nil {
		return
	}
	m.sourceRejected.WithLabelValues(source, reason).Inc()
}
