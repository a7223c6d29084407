package logrotate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/runtime"
)

// Runtime is what the rotation needs of a container runtime;
// *cri.Runtime implements it.
type Runtime interface {
	// GetPods lists the runtime's pods, as runtime.Runtime's: with all
	// false, the running containers of pods that have one (only those
	// with State runtime.ContainerStateRunning are rotated).
	GetPods(ctx context.Context, all bool) ([]*runtime.Pod, error)
	// ContainerLogPath returns the CRI log file of a container (its
	// runtime ID, ContainerID.ID). The Manager asks once per container
	// and remembers the answer. An error wrapping runtime.ErrNotFound
	// means the container has no log file (or is gone): it is not
	// rotated.
	ContainerLogPath(ctx context.Context, containerID string) (string, error)
	// ReopenContainerLog makes the runtime write the container's log to
	// a new file at its log path, after the old one was renamed away (or
	// deleted).
	ReopenContainerLog(ctx context.Context, containerID string) error
}

// The kubelet's defaults (containerLogMaxSize, containerLogMaxFiles,
// containerLogMonitorInterval, containerLogMaxWorkers).
const (
	DefaultMaxSize  = 10 << 20 // 10Mi
	DefaultMaxFiles = 5
	DefaultInterval = 10 * time.Second
	DefaultWorkers  = 1
	// DefaultMetricsNamespace prefixes the metric names, as those of
	// package metrics.
	DefaultMetricsNamespace = "kubelet"
)

// Options configure a Manager. Every field but Runtime is optional; the
// zero value of each means its documented default.
type Options struct {
	// Runtime lists the running containers, gives their log files and
	// reopens them. Required.
	Runtime Runtime
	// MaxSize is the size in bytes from which a running container's log
	// file is rotated. Default DefaultMaxSize (10 MiB); must not be
	// negative (an agent that wants no rotation runs no Manager).
	MaxSize int64
	// MaxFiles is the most log files a container instance keeps, the
	// current one included; the oldest rotated ones are deleted. Default
	// DefaultMaxFiles (5); at least 2 (the current file and the one just
	// rotated, which the runtime may still be writing to).
	MaxFiles int
	// Interval is the period of the rotation pass. Default
	// DefaultInterval (10s). (The kubelet refuses less than 3 s; this
	// package takes any period, for tests.)
	Interval time.Duration
	// Workers is how many containers a pass checks and rotates at once.
	// Default DefaultWorkers (1).
	Workers int
	// Clock paces the passes and names the rotated files. Default: the
	// real clock.
	Clock clock.WithTicker
	// Logger receives the first failure of each container in a row of
	// failures (V(4) the next ones, V(2) its recovery), and V(2) each
	// rotation. The zero value discards.
	Logger logr.Logger
	// Registerer receives the metrics (see the package doc). Default nil:
	// no metrics.
	Registerer prometheus.Registerer
	// MetricsNamespace prefixes the metric names. Default
	// DefaultMetricsNamespace ("kubelet").
	MetricsNamespace string
}

// withDefaults returns a copy of o with every default applied.
func (o Options) withDefaults() Options {
	if o.MaxSize == 0 {
		o.MaxSize = DefaultMaxSize
	}
	if o.MaxFiles == 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.Workers == 0 {
		o.Workers = DefaultWorkers
	}
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
	if o.Runtime == nil {
		errs = append(errs, errors.New("Runtime is required"))
	}
	if o.MaxSize < 0 {
		errs = append(errs, fmt.Errorf("MaxSize must not be negative, got %d", o.MaxSize))
	}
	if o.MaxFiles < 2 {
		errs = append(errs, fmt.Errorf("MaxFiles must be at least 2, got %d", o.MaxFiles))
	}
	if o.Interval < 0 {
		errs = append(errs, fmt.Errorf("Interval must not be negative, got %s", o.Interval))
	}
	if o.Workers < 0 {
		errs = append(errs, fmt.Errorf("Workers must not be negative, got %d", o.Workers))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("logrotate: invalid options: %w", err)
	}
	return nil
}
