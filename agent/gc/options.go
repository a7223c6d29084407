package gc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/runtime"
)

// Runtime is what garbage collection needs of a container runtime;
// *cri.Runtime implements it. An agent without CRI implements it over its
// own objects.
type Runtime interface {
	// GetPods lists the runtime's pods; the Manager asks for all of them
	// (all true): every container and sandbox, with its State,
	// CreatedAt, Attempt and, for a container, its SandboxID.
	GetPods(ctx context.Context, all bool) ([]*runtime.Pod, error)
	// RemoveContainer removes a container that does not run, with its
	// log files. A container that is gone counts as removed.
	RemoveContainer(ctx context.Context, id string) error
	// RemoveSandbox stops and removes a sandbox. One that is gone counts
	// as removed.
	RemoveSandbox(ctx context.Context, id string) error
	// KillContainer stops a container (within gracePeriod seconds): the
	// Manager stops a container in an unknown state before it removes it.
	KillContainer(ctx context.Context, id runtime.ContainerID, gracePeriod int64) error
}

// PodState tells what may be removed of a pod; *podworker.Workers
// implements it (the kubelet's podStateProvider).
type PodState interface {
	// ShouldPodContentBeRemoved: the pod was deleted (or evicted) and
	// has terminated, or no worker knows it: everything of it may go.
	ShouldPodContentBeRemoved(uid types.UID) bool
	// ShouldPodRuntimeBeRemoved: the pod has terminated (or no worker
	// knows it).
	ShouldPodRuntimeBeRemoved(uid types.UID) bool
	// ShouldPodContainersBeTerminating: the pod's containers are being
	// stopped (or have been). Together with ShouldPodRuntimeBeRemoved it
	// tells a pod that is still terminating, which is never touched.
	ShouldPodContainersBeTerminating(uid types.UID) bool
	// IsPodKnownTerminated and CouldHaveRunningContainers tell, together,
	// whether a worker knows the pod (or the workers have not been told
	// the desired pods yet): then its folders are never swept.
	IsPodKnownTerminated(uid types.UID) bool
	CouldHaveRunningContainers(uid types.UID) bool
}

// The kubelet's defaults (--minimum-container-ttl-duration,
// --maximum-dead-containers-per-container, --maximum-dead-containers and
// its ContainerGCPeriod).
const (
	DefaultMinAge             = 0
	DefaultMaxPerPodContainer = 1
	DefaultMaxContainers      = -1
	DefaultPeriod             = time.Minute
	// DefaultSourcesReadyPoll is how often Run checks, until the pod
	// sources are ready, whether it can make the pass that removes what
	// deleted pods left (and sweeps their folders).
	DefaultSourcesReadyPoll = time.Second
	// DefaultMetricsNamespace prefixes the metric names, as those of
	// package metrics.
	DefaultMetricsNamespace = "kubelet"
)

// Policy is the kubelet's container GC policy (ContainerGCPolicy).
type Policy struct {
	// MinAge is the age from which a dead container may be removed (of
	// a live pod; those of deleted pods go at any age). Default 0.
	MinAge time.Duration
	// MaxPerPodContainer is the most dead instances kept of each
	// container of a live pod (per pod UID and container name), the
	// newest ones. Default 1 (the kubelet's); the zero value means the
	// default: pass a negative value for no limit. Use
	// Options.KeepNoDeadInstance for 0.
	MaxPerPodContainer int
	// MaxContainers is the most dead containers kept on the node in all;
	// beyond it, each container keeps at least one and the oldest go.
	// Default -1, no limit; the zero value means the default.
	MaxContainers int
}

// Options configure a Manager. Every field but Runtime and Pods is
// optional; the zero value of each means its documented default.
type Options struct {
	// Runtime lists the containers and sandboxes and removes them.
	// Required.
	Runtime Runtime
	// Pods tells what may go of each pod (the pod workers). Required.
	Pods PodState
	// SourcesReady reports whether every pod source has delivered its
	// pods and the workers have been told them: until then nothing of a
	// pod the workers do not know is removed, and no folder swept (the
	// kubelet's allSourcesReady). Default nil: always ready.
	SourcesReady func() bool
	// Policy is the container GC policy. Default: the kubelet's.
	Policy Policy
	// KeepNoDeadInstance sets Policy.MaxPerPodContainer to 0: no dead
	// instance is kept (not even for kubectl logs --previous).
	KeepNoDeadInstance bool
	// Period is the period of the GC pass (the kubelet's
	// ContainerGCPeriod). Default DefaultPeriod (1m).
	Period time.Duration
	// PodFolderRoots are the folders whose UID-named subfolders are the
	// pods' own (runtime/cri's VolumeRoot, agent/volume's Root): a
	// subfolder of a pod that no worker knows and the runtime no longer
	// has is unmounted and removed (the kubelet's orphaned pod
	// directories and pod log directories). Names that begin with a dot
	// are never touched. Default none.
	PodFolderRoots []string
	// Workers is how many removals a pass makes at once. Default 1 (the
	// kubelet's one after the other).
	Workers int
	// Clock paces the passes and ages the containers. Default the real
	// clock.
	Clock clock.WithTicker
	// Logger receives the first failure of each object in a row (V(4)
	// the next ones, V(2) when it is finally removed), each pass's
	// result at V(4) (V(2) when it removed something), errors of the
	// listing once in a row. The zero value discards.
	Logger logr.Logger
	// OnListFailure, when set, is called with the error of the first
	// failed listing in a row (the agent records the kubelet's
	// ContainerGCFailed event on the Node with it). Default nil.
	OnListFailure func(err error)
	// Registerer receives the metrics (see the package doc). Default
	// nil: none.
	Registerer prometheus.Registerer
	// MetricsNamespace prefixes the metric names. Default
	// DefaultMetricsNamespace ("kubelet").
	MetricsNamespace string

	// sourcesReadyPoll: see DefaultSourcesReadyPoll (a test seam).
	sourcesReadyPoll time.Duration
	// mounts lists the mount points (a test seam). Default the
	// process's mount table.
	mounts func() ([]string, error)
}

// withDefaults returns a copy of o with every default applied.
func (o Options) withDefaults() Options {
	if o.Policy.MaxPerPodContainer == 0 {
		o.Policy.MaxPerPodContainer = DefaultMaxPerPodContainer
	}
	if o.KeepNoDeadInstance {
		o.Policy.MaxPerPodContainer = 0
	}
	if o.Policy.MaxContainers == 0 {
		o.Policy.MaxContainers = DefaultMaxContainers
	}
	if o.Period == 0 {
		o.Period = DefaultPeriod
	}
	if o.Workers == 0 {
		o.Workers = 1
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.MetricsNamespace == "" {
		o.MetricsNamespace = DefaultMetricsNamespace
	}
	if o.SourcesReady == nil {
		o.SourcesReady = func() bool { return true }
	}
	if o.sourcesReadyPoll == 0 {
		o.sourcesReadyPoll = DefaultSourcesReadyPoll
	}
	if o.mounts == nil {
		o.mounts = mountPoints
	}
	return o
}

// validate rejects options that cannot work (after withDefaults).
func (o Options) validate() error {
	var errs []error
	if o.Runtime == nil {
		errs = append(errs, errors.New("Runtime is required"))
	}
	if o.Pods == nil {
		errs = append(errs, errors.New("Pods is required"))
	}
	if o.Policy.MinAge < 0 {
		errs = append(errs, fmt.Errorf("Policy.MinAge must not be negative, got %s", o.Policy.MinAge))
	}
	if o.Period < 0 {
		errs = append(errs, fmt.Errorf("Period must not be negative, got %s", o.Period))
	}
	if o.Workers < 0 {
		errs = append(errs, fmt.Errorf("Workers must not be negative, got %d", o.Workers))
	}
	for i, r := range o.PodFolderRoots {
		if !filepathIsAbs(r) {
			errs = append(errs, fmt.Errorf("PodFolderRoots[%d] must be an absolute path, got %q", i, r))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("gc: invalid options: %w", err)
	}
	return nil
}
