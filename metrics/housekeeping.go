package metrics

// The setters in this file are called by the agent's housekeeping pass
// (the kubelet's HandlePodCleanups), once per pass, in any order.

// SetDesiredPods sets desired_pods{static}: the pods the agent is
// instructed to run, mirror pods excluded. static selects the "true" series,
// otherwise the "" series.
func (m *Metrics) SetDesiredPods(static bool, n int) {
	if m == nil {
		return
	}
	m.desiredPods.WithLabelValues(staticLabel(static)).Set(float64(n))
}

// SetActivePods sets active_pods{static}: the desired pods that are neither
// known to be terminated nor terminal without a termination request, mirror
// pods excluded.
func (m *Metrics) SetActivePods(static bool, n int) {
	if m == nil {
		return
	}
	m.activePods.WithLabelValues(staticLabel(static)).Set(float64(n))
}

// SetMirrorPods sets mirror_pods: the mirror pods the agent will try to
// create.
func (m *Metrics) SetMirrorPods(n int) {
	if m == nil {
		return
	}
	m.mirrorPods.Set(float64(n))
}

// SetWorkingPods sets working_pods for all 15 valid label combinations:
// the count in counts, or 0 for a combination counts does not hold. Call it
// with the complete counts of one pass, never with a partial update.
//
// Keys that are not valid (see WorkingPodKey.Valid) are ignored and reported
// in an *InvalidWorkingPodKeyError; the valid combinations are set even then,
// so the metric never goes stale because of one bad key.
func (m *Metrics) SetWorkingPods(counts WorkingPodCounts) error {
	var err error
	if bad := counts.invalidKeys(); len(bad) > 0 {
		err = &InvalidWorkingPodKeyError{Keys: bad}
	}
	if m == nil {
		return err
	}
	for _, k := range m.workingPodKeys {
		m.workingPods.WithLabelValues(k.Lifecycle, k.Config, k.Static).Set(float64(counts[k]))
	}
	return err
}

// AddRestartedPods adds n to restarted_pods_total{static}: pods deleted and
// recreated with the same UID that housekeeping started again. Call it for
// both values of static on every pass, also with n == 0, as the kubelet does.
// A negative n is taken as 0, since a counter cannot go down.
func (m *Metrics) AddRestartedPods(static bool, n int) {
	if m == nil {
		return
	}
	m.restartedPods.WithLabelValues(staticLabel(static)).Add(nonNegative(n))
}

// AddOrphanedRuntimePods adds n to orphaned_runtime_pods_total: runtime pods
// unknown to the pod workers that housekeeping asked to terminate. A negative
// n is taken as 0.
func (m *Metrics) AddOrphanedRuntimePods(n int) {
	if m == nil {
		return
	}
	m.orphanedRuntimePods.Add(nonNegative(n))
}

func nonNegative(n int) float64 {
	if n < 0 {
		return 0
	}
	return float64(n)
}
