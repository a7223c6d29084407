package shutdown

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Reasons and messages, the kubelet's (pkg/kubelet/nodeshutdown).
const (
	// ReasonTerminated is the status reason of a pod stopped for the
	// shutdown.
	ReasonTerminated = "Terminated"
	// MessageTerminated is its status message, and the message of its
	// DisruptionTarget condition.
	MessageTerminated = "Pod was terminated in response to imminent node shutdown."
	// ReasonNotAdmitted is the reason of a new pod refused while the node
	// shuts down (the kubelet's NodeShutdownNotAdmittedReason).
	ReasonNotAdmitted = "NodeShutdown"
	// MessageNotAdmitted is its message.
	MessageNotAdmitted = "Pod was rejected as the node is shutting down."
	// MessageNodeShuttingDown is the message of the Node's Ready condition,
	// False, while the node shuts down (and ShutdownStatus's error).
	MessageNodeShuttingDown = "node is shutting down"
	// ReasonNodeShutdown is the reason of the Node's event (the kubelet's
	// events.NodeShutdown).
	ReasonNodeShutdown = "NodeShutdown"
	// StateFileName is the kubelet's name of the file, in its root
	// folder, that keeps the times of the last shutdown
	// (Options.StateFile).
	StateFileName = "graceful_node_shutdown_state"
)

// Priorities of the two groups of ShutdownGracePeriod and
// ShutdownGracePeriodCriticalPods (the kubelet's
// scheduling.DefaultPriorityWhenNoDefaultClassExists and
// scheduling.SystemCriticalPriority).
const (
	DefaultPriority        int32 = 0
	SystemCriticalPriority int32 = 2 * 1000000000
)

// DefaultMetricsNamespace prefixes the metric names, as those of package
// metrics: kubelet_graceful_shutdown_start_time_seconds.
const DefaultMetricsNamespace = "kubelet"

// PriorityGracePeriod is one entry of the kubelet's
// shutdownGracePeriodByPodPriority: pods whose priority is at least
// Priority (and below the next entry's) get ShutdownGracePeriodSeconds to
// stop. The JSON names are the kubelet configuration's.
type PriorityGracePeriod struct {
	Priority                   int32 `json:"priority"`
	ShutdownGracePeriodSeconds int64 `json:"shutdownGracePeriodSeconds"`
}

// KillFunc stops a pod, as the kubelet's KillPodFunc: it gives the pod
// gracePeriodSeconds to stop, has statusFn edit the status written for the
// stopped pod, and returns once the pod has stopped (nil), or with an error
// when it could not, or when ctx ended first. ctx ends when the pod's group
// ran out of time.
type KillFunc func(ctx context.Context, pod *v1.Pod, gracePeriodSeconds int64, statusFn func(*v1.PodStatus)) error

// Options configure a Manager. ActivePods, KillPod and a grace period
// (ShutdownGracePeriod or ShutdownGracePeriodByPodPriority) are required;
// every other field's zero value means its documented default.
type Options struct {
	// ShutdownGracePeriod is the time the node's shutdown may take, the
	// kubelet's shutdownGracePeriod: pods below SystemCriticalPriority get
	// ShutdownGracePeriod - ShutdownGracePeriodCriticalPods, then critical
	// pods ShutdownGracePeriodCriticalPods. Whole seconds (the kubelet's
	// groups are counted in seconds; a fraction is dropped). Must be 0
	// when ShutdownGracePeriodByPodPriority is set.
	ShutdownGracePeriod time.Duration
	// ShutdownGracePeriodCriticalPods is the part of ShutdownGracePeriod
	// kept for the critical pods (shutdownGracePeriodCriticalPods).
	// Default 0; at most ShutdownGracePeriod.
	ShutdownGracePeriodCriticalPods time.Duration
	// ShutdownGracePeriodByPodPriority, when set, gives the groups
	// (shutdownGracePeriodByPodPriority): in any order, priorities unique,
	// grace periods not negative.
	ShutdownGracePeriodByPodPriority []PriorityGracePeriod

	// ActivePods returns the pods to stop: those admitted and not yet
	// terminated (the kubelet's GetActivePods). Required.
	ActivePods func() []*v1.Pod
	// KillPod stops one pod. Required.
	KillPod KillFunc
	// SyncNode, when set, is called once the node is shutting down, beside
	// the pods' termination, to write the Node's status at once (its Ready
	// condition, see ConfigureNode); Shutdown waits for it. Default nil.
	SyncNode func(ctx context.Context) error

	// Recorder and NodeRef receive the Node's NodeShutdown event ("Shutdown
	// manager detected shutdown event"). Default nil: no event.
	Recorder record.EventRecorder
	NodeRef  *v1.ObjectReference
	// StateFile keeps the start and end times of the last shutdown across
	// restarts, for the metrics (the kubelet's
	// ROOT/graceful_node_shutdown_state). Default "": not kept. Must be
	// absolute.
	StateFile string

	// Logger: V(1) each group and pod, as the kubelet's. The zero value
	// discards.
	Logger logr.Logger
	// Clock times the groups and the metrics. Default: the real clock.
	Clock clock.WithTicker
	// Registerer receives the metrics (see the package doc). Default nil:
	// no metrics.
	Registerer prometheus.Registerer
	// MetricsNamespace prefixes the metric names. Default
	// DefaultMetricsNamespace ("kubelet").
	MetricsNamespace string
}

// withDefaults returns a copy of o with every default applied.
func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.MetricsNamespace == "" {
		o.MetricsNamespace = DefaultMetricsNamespace
	}
	return o
}

// validate rejects options that cannot work (after withDefaults).
func (o Options) validate() error {
	var errs []error
	if o.ActivePods == nil {
		errs = append(errs, errors.New("ActivePods is required"))
	}
	if o.KillPod == nil {
		errs = append(errs, errors.New("KillPod is required"))
	}
	if len(o.ShutdownGracePeriodByPodPriority) == 0 {
		switch {
		case o.ShutdownGracePeriod < 0:
			errs = append(errs, fmt.Errorf("ShutdownGracePeriod must not be negative, got %s", o.ShutdownGracePeriod))
		case o.ShutdownGracePeriod < time.Second:
			errs = append(errs, errors.New("a grace period is required: ShutdownGracePeriod (at least 1s) or ShutdownGracePeriodByPodPriority"))
		}
		if o.ShutdownGracePeriodCriticalPods < 0 {
			errs = append(errs, fmt.Errorf("ShutdownGracePeriodCriticalPods must not be negative, got %s", o.ShutdownGracePeriodCriticalPods))
		} else if o.ShutdownGracePeriodCriticalPods > o.ShutdownGracePeriod {
			errs = append(errs, fmt.Errorf("ShutdownGracePeriodCriticalPods %s must not exceed ShutdownGracePeriod %s", o.ShutdownGracePeriodCriticalPods, o.ShutdownGracePeriod))
		}
	} else {
		if o.ShutdownGracePeriod != 0 || o.ShutdownGracePeriodCriticalPods != 0 {
			errs = append(errs, errors.New("ShutdownGracePeriodByPodPriority and ShutdownGracePeriod (or ShutdownGracePeriodCriticalPods) exclude each other, as in the kubelet's configuration"))
		}
		seen := map[int32]bool{}
		for i, p := range o.ShutdownGracePeriodByPodPriority {
			if seen[p.Priority] {
				errs = append(errs, fmt.Errorf("ShutdownGracePeriodByPodPriority[%d]: priority %d given twice", i, p.Priority))
			}
			seen[p.Priority] = true
			if p.ShutdownGracePeriodSeconds < 0 {
				errs = append(errs, fmt.Errorf("ShutdownGracePeriodByPodPriority[%d]: shutdownGracePeriodSeconds must not be negative, got %d", i, p.ShutdownGracePeriodSeconds))
			}
		}
	}
	if o.StateFile != "" && !filepath.IsAbs(o.StateFile) {
		errs = append(errs, fmt.Errorf("StateFile must be an absolute path, got %q", o.StateFile))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("shutdown: invalid options: %w", err)
	}
	return nil
}

// Groups returns the priority groups of o, lowest priority first: the
// ShutdownGracePeriodByPodPriority entries sorted, or the two groups of
// ShutdownGracePeriod (priority 0: ShutdownGracePeriod -
// ShutdownGracePeriodCriticalPods; SystemCriticalPriority:
// ShutdownGracePeriodCriticalPods), as the kubelet migrates them.
func (o Options) Groups() []PriorityGracePeriod {
	return groups(o)
}
