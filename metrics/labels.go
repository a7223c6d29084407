package metrics

import (
	"fmt"
	"sort"
	"strings"
)

// Values of the lifecycle label of working_pods: the pod worker state.
const (
	LifecycleSync        = "sync"        // the pod should be running
	LifecycleTerminating = "terminating" // its containers are being stopped
	LifecycleTerminated  = "terminated"  // nothing runs; cleanup is pending
)

// Values of the config label of working_pods: why the worker exists.
const (
	ConfigDesired     = "desired"      // the pod is in the desired set
	ConfigOrphan      = "orphan"       // the pod left the desired set (removed or force deleted)
	ConfigRuntimeOnly = "runtime_only" // the worker has no spec: a pod found only in the runtime
)

// Values of the static label. desired_pods, active_pods and
// restarted_pods_total use StaticTrue and StaticFalse; working_pods also uses
// StaticUnknown, for runtime-only pods whose source cannot be known.
const (
	StaticTrue    = "true"
	StaticFalse   = ""
	StaticUnknown = "unknown"
)

// Values of the operation_type label of pod_worker_duration_seconds.
// ObservePodWorkerDuration records any other value as OperationUnknown, so a
// caller bug cannot grow the number of series without bound.
const (
	OperationCreate     = "create"
	OperationUpdate     = "update"
	OperationSync       = "sync"
	OperationKill       = "kill"
	OperationTerminated = "terminated"
	OperationUnknown    = "unknown"
)

// WorkingPodKey is one combination of the labels of working_pods.
type WorkingPodKey struct {
	Lifecycle string // LifecycleSync, LifecycleTerminating or LifecycleTerminated
	Config    string // ConfigDesired, ConfigOrphan or ConfigRuntimeOnly
	Static    string // StaticTrue, StaticFalse, or StaticUnknown (only with ConfigRuntimeOnly)
}

// String returns the key in label syntax, for errors and logs.
func (k WorkingPodKey) String() string {
	return fmt.Sprintf("{lifecycle=%q, config=%q, static=%q}", k.Lifecycle, k.Config, k.Static)
}

// Valid reports whether k is one of the 15 combinations returned by
// WorkingPodKeys.
func (k WorkingPodKey) Valid() bool {
	switch k.Lifecycle {
	case LifecycleSync, LifecycleTerminating, LifecycleTerminated:
	default:
		return false
	}
	switch k.Config {
	case ConfigDesired, ConfigOrphan:
		return k.Static == StaticTrue || k.Static == StaticFalse
	case ConfigRuntimeOnly:
		return k.Static == StaticUnknown
	default:
		return false
	}
}

// WorkingPodKeys returns the 15 valid combinations of the working_pods labels:
// the three lifecycles times the five (config, static) pairs (desired, ""),
// (desired, "true"), (orphan, ""), (orphan, "true") and
// (runtime_only, "unknown"). The slice is new on every call.
func WorkingPodKeys() []WorkingPodKey {
	keys := make([]WorkingPodKey, 0, 15)
	for _, lifecycle := range []string{LifecycleSync, LifecycleTerminating, LifecycleTerminated} {
		for _, config := range []string{ConfigDesired, ConfigOrphan} {
			for _, static := range []string{StaticFalse, StaticTrue} {
				keys = append(keys, WorkingPodKey{Lifecycle: lifecycle, Config: config, Static: static})
			}
		}
		keys = append(keys, WorkingPodKey{Lifecycle: lifecycle, Config: ConfigRuntimeOnly, Static: StaticUnknown})
	}
	return keys
}

// WorkingPodKeyFor returns the key under which the kubelet counts one pod
// worker, given its lifecycle label and the Orphan, HasConfig and Static
// flags the pod workers report for it. A worker without a spec (hasConfig
// false) is runtime_only with static "unknown", whatever the other flags say.
func WorkingPodKeyFor(lifecycle string, orphan, hasConfig, static bool) WorkingPodKey {
	if !hasConfig {
		return WorkingPodKey{Lifecycle: lifecycle, Config: ConfigRuntimeOnly, Static: StaticUnknown}
	}
	config := ConfigDesired
	if orphan {
		config = ConfigOrphan
	}
	return WorkingPodKey{Lifecycle: lifecycle, Config: config, Static: staticLabel(static)}
}

// WorkingPodCounts is the number of pod workers per label combination, as
// passed to SetWorkingPods. Missing valid combinations count as zero.
type WorkingPodCounts map[WorkingPodKey]int

// Inc adds one to the count of k.
func (c WorkingPodCounts) Inc(k WorkingPodKey) { c[k]++ }

// invalidKeys returns the keys of c that are not valid, sorted.
func (c WorkingPodCounts) invalidKeys() []WorkingPodKey {
	var bad []WorkingPodKey
	for k := range c {
		if !k.Valid() {
			bad = append(bad, k)
		}
	}
	sort.Slice(bad, func(i, j int) bool { return bad[i].String() < bad[j].String() })
	return bad
}

// InvalidWorkingPodKeyError is returned by SetWorkingPods when the counts hold
// combinations that are not among WorkingPodKeys.
type InvalidWorkingPodKeyError struct {
	Keys []WorkingPodKey // sorted by String
}

func (e *InvalidWorkingPodKeyError) Error() string {
	parts := make([]string, len(e.Keys))
	for i, k := range e.Keys {
		parts[i] = k.String()
	}
	return fmt.Sprintf("invalid working_pods label combination(s): %s", strings.Join(parts, ", "))
}

// staticLabel is the static label value of a pod whose source is known.
func staticLabel(static bool) string {
	if static {
		return StaticTrue
	}
	return StaticFalse
}

// operationLabel bounds the operation_type label to the known values.
func operationLabel(operation string) string {
	switch operation {
	case OperationCreate, OperationUpdate, OperationSync, OperationKill, OperationTerminated:
		return operation
	default:
		return OperationUnknown
	}
}
