package eviction

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"
)

// The kubelet's defaults.
const (
	// DefaultMonitoringInterval is the period of the eviction pass (the
	// kubelet's evictionMonitoringPeriod).
	DefaultMonitoringInterval = 10 * time.Second
	// DefaultPressureTransitionPeriod is how long a pressure condition
	// stays on after its last threshold stopped being met
	// (evictionPressureTransitionPeriod).
	DefaultPressureTransitionPeriod = 5 * time.Minute
	// DefaultMetricsNamespace prefixes the metric names.
	DefaultMetricsNamespace = "kubelet"
	// ImmediateGracePeriodSeconds is the grace period of the pods evicted
	// for a hard threshold or a local storage limit.
	ImmediateGracePeriodSeconds int64 = 1
	// podCleanupTimeout bounds the wait for evicted pods to be cleaned
	// up, polled every podCleanupPollInterval.
	podCleanupTimeout      = 30 * time.Second
	podCleanupPollInterval = time.Second
)

// NodeStatsProvider gives the node-level figures the signals are made of:
// Memory (AvailableBytes and WorkingSetBytes), Fs (the node file system),
// Runtime.ImageFs (the image file system) and Rlimit (MaxPID and
// NumOfRunningProcesses). A missing figure leaves its signal unobserved.
// Machine reads them from this machine; a VM or remote provider, or a
// test, gives its own.
type NodeStatsProvider interface {
	NodeStats(ctx context.Context) (*statsapi.NodeStats, error)
}

// DedicatedImageFs is implemented by a NodeStatsProvider that knows
// whether the image file system is another file system than the node's.
// Without it, they are taken to be the same.
type DedicatedImageFs interface {
	HasDedicatedImageFs(ctx context.Context) (bool, error)
}

// PodStatsProvider gives the usage of the node's pods, as the Summary API
// does: Memory.WorkingSetBytes, ProcessStats, VolumeStats (by volume
// name), EphemeralStorage, and per container Memory, Rootfs and Logs.
// Pods are matched by PodRef.UID. *cri.Runtime implements it (memory);
// LocalStorage adds the disk usage of the pods' emptyDirs and logs.
type PodStatsProvider interface {
	ListPodStats(ctx context.Context) ([]statsapi.PodStats, error)
}

// ImageGC deletes unused images to free disk space (an image garbage
// collector, such as agent/imagegc's); it returns the bytes freed.
type ImageGC interface {
	DeleteUnusedImages(ctx context.Context) (int64, error)
}

// ContainerGC deletes every dead container and sandbox it may (a
// container garbage collector, such as agent/gc's).
type ContainerGC interface {
	DeleteAllUnusedContainers(ctx context.Context) error
}

// Eviction is what the Manager asks of Options.Evict.
type Eviction struct {
	// GracePeriodSeconds overrides the pod's termination grace period:
	// ImmediateGracePeriodSeconds (1) for a hard threshold or a local
	// storage limit, Options.MaxPodGracePeriodSeconds for a soft one.
	GracePeriodSeconds int64
	// Message is the pod's status message (its reason is Reason).
	Message string
	// Condition is the DisruptionTarget condition to add to the pod's
	// status (reason TerminationByKubelet), or nil (local storage limits,
	// as the kubelet).
	Condition *v1.PodCondition
	// Signal is the signal (or local storage limit) evicted for.
	Signal string
}

// Apply sets st as the kubelet's eviction does: phase Failed, reason
// Evicted, the message, and the condition (replacing one of its type).
func (e Eviction) Apply(st *v1.PodStatus) {
	st.Phase = v1.PodFailed
	st.Reason = Reason
	st.Message = e.Message
	if e.Condition == nil {
		return
	}
	for i := range st.Conditions {
		if st.Conditions[i].Type == e.Condition.Type {
			c := *e.Condition
			if st.Conditions[i].Status == c.Status && !st.Conditions[i].LastTransitionTime.IsZero() {
				c.LastTransitionTime = st.Conditions[i].LastTransitionTime
			}
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, *e.Condition)
}

// Options configure a Manager. NodeStats, PodStats, ActivePods and Evict
// are required; every other field's zero value means its documented
// default.
type Options struct {
	// Thresholds are the hard and soft thresholds (see ParseThresholds).
	// Default nil: the kubelet's hard defaults (DefaultHard). An empty,
	// non-nil slice: no threshold (local storage limits only).
	Thresholds []Threshold
	// PressureTransitionPeriod is how long a pressure condition stays on
	// after its thresholds stopped being met. Default 5m.
	PressureTransitionPeriod time.Duration
	// MaxPodGracePeriodSeconds is the grace period of pods evicted for a
	// soft threshold (evictionMaxPodGracePeriod). Default 0; must not be
	// negative.
	MaxPodGracePeriodSeconds int64
	// MonitoringInterval is the period of the eviction pass. Default 10s.
	MonitoringInterval time.Duration
	// DisableLocalStorageEviction turns off the eviction of pods over an
	// emptyDir sizeLimit or an ephemeral-storage limit (the kubelet's
	// localStorageCapacityIsolation false). Default false: enforced.
	DisableLocalStorageEviction bool

	// NodeStats gives the node's signals. Required.
	NodeStats NodeStatsProvider
	// PodStats gives the pods' usage. Required. A pass asks for it only
	// when it will look at it: some active pod has a local storage limit,
	// or a threshold is met (so NodeStats must not depend on its calls).
	PodStats PodStatsProvider
	// ActivePods returns the pods that may be evicted: admitted, not
	// terminal and not asked to terminate. Required; called once per pass.
	ActivePods func() []*v1.Pod
	// Evict stops the pod with the eviction's grace period, then gives it
	// the eviction's status (Eviction.Apply). It should return once the
	// pod's termination is under way. Required.
	Evict func(ctx context.Context, pod *v1.Pod, e Eviction) error
	// PodCleanedUp reports whether an evicted pod's resources are freed;
	// after an eviction the Manager waits for it, up to 30 s, before its
	// next pass. Default nil: no wait.
	PodCleanedUp func(pod *v1.Pod) bool
	// ImageGC and ContainerGC reclaim disk space before pods are evicted
	// for disk pressure. Default nil: no reclaim.
	ImageGC     ImageGC
	ContainerGC ContainerGC

	// Recorder receives the Evicted events of pods, and with NodeRef the
	// EvictionThresholdMet events of the node. Default nil: none.
	Recorder record.EventRecorder
	// NodeRef is the node's reference for its events.
	NodeRef *v1.ObjectReference
	// Clock paces the passes and times grace and transition periods.
	// Default: the real clock (whose monotonic readings make wall clock
	// jumps harmless).
	Clock clock.WithTicker
	// Logger: errors once per row of failures, V(2) evictions and
	// condition changes, V(4) each pass. The zero value discards.
	Logger logr.Logger
	// Registerer receives the metrics (see the package doc). Default nil.
	Registerer prometheus.Registerer
	// MetricsNamespace prefixes the metric names. Default "kubelet".
	MetricsNamespace string
}

func (o Options) withDefaults() Options {
	if o.Thresholds == nil {
		// The defaults parse: tested.
		o.Thresholds, _ = ParseThresholds(DefaultHard(), nil, nil, nil)
	}
	if o.PressureTransitionPeriod == 0 {
		o.PressureTransitionPeriod = DefaultPressureTransitionPeriod
	}
	if o.MonitoringInterval == 0 {
		o.MonitoringInterval = DefaultMonitoringInterval
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.MetricsNamespace == "" {
		o.MetricsNamespace = DefaultMetricsNamespace
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.NodeStats == nil {
		errs = append(errs, errors.New("NodeStats is required"))
	}
	if o.PodStats == nil {
		errs = append(errs, errors.New("PodStats is required"))
	}
	if o.ActivePods == nil {
		errs = append(errs, errors.New("ActivePods is required"))
	}
	if o.Evict == nil {
		errs = append(errs, errors.New("Evict is required"))
	}
	if o.PressureTransitionPeriod < 0 {
		errs = append(errs, fmt.Errorf("PressureTransitionPeriod must not be negative, got %s", o.PressureTransitionPeriod))
	}
	if o.MonitoringInterval < 0 {
		errs = append(errs, fmt.Errorf("MonitoringInterval must not be negative, got %s", o.MonitoringInterval))
	}
	if o.MaxPodGracePeriodSeconds < 0 {
		errs = append(errs, fmt.Errorf("MaxPodGracePeriodSeconds must not be negative, got %d", o.MaxPodGracePeriodSeconds))
	}
	seen := map[key]bool{}
	for i, t := range o.Thresholds {
		switch {
		case !validSignal(t.Signal):
			errs = append(errs, fmt.Errorf("Thresholds[%d]: unsupported eviction signal %v", i, t.Signal))
		case t.GracePeriod < 0:
			errs = append(errs, fmt.Errorf("Thresholds[%d] (%s): negative grace period %s", i, t, t.GracePeriod))
		case t.Value.Quantity == nil && (t.Value.Percentage <= 0 || t.Value.Percentage > 1):
			errs = append(errs, fmt.Errorf("Thresholds[%d] (%s): percentage must be in (0%%, 100%%]", i, t))
		case t.Value.Quantity != nil && t.Value.Quantity.Sign() <= 0:
			errs = append(errs, fmt.Errorf("Thresholds[%d] (%s): must be positive", i, t))
		case seen[t.key()]:
			errs = append(errs, fmt.Errorf("Thresholds[%d] (%s): a second threshold of the same kind for %s", i, t, t.Signal))
		}
		seen[t.key()] = true
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("eviction: invalid options: %w", err)
	}
	return nil
}
