package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/agent/eviction"
	"github.com/podlife/podlife/agent/gc"
	"github.com/podlife/podlife/agent/imagegc"
	"github.com/podlife/podlife/agent/server"
	"github.com/podlife/podlife/agent/shutdown"
	"github.com/podlife/podlife/internal/sysctl"
	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/podmanager/source"
	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/prober"
)

// Defaults of Options.
const (
	// DefaultHousekeepingInterval is the kubelet's housekeeping period.
	DefaultHousekeepingInterval = 2 * time.Second
	// DefaultRelistInterval is the period of the runtime relist (the
	// kubelet's PLEG period).
	DefaultRelistInterval = runtime.DefaultRelistInterval
)

// Runner is a long-running part of an agent, such as a pod source: Run
// blocks until ctx is done.
type Runner interface {
	Run(ctx context.Context) error
}

// Source is a pod source the agent runs besides its manifest folder (an HTTP
// URL, the API server, a channel the embedding program pushes into).
type Source struct {
	// Name is the source name stamped in kubernetes.io/config.source
	// (podmanager.HTTPSource, podmanager.APISource, ...). Pods of any source
	// other than podmanager.APISource are static pods. Required, unique.
	Name string
	// New builds the source around the sink its snapshots must go to. It is
	// called once, by agent.New; the returned Runner is run by Agent.Run.
	New func(sink source.Sink) (Runner, error)
}

// Options configure an Agent. Every field but Runtime and NodeName is
// optional; the zero value of each means its documented default.
type Options struct {
	// Runtime runs the pods (runtime/cri over containerd, CRI-O or fakecri).
	// Required. The agent does not close it.
	Runtime runtime.Runtime
	// NodeName is this node's name: static pods are named <name>-<NodeName>.
	// Required; a DNS-1123 subdomain.
	NodeName string

	// ManifestPath is a folder (or a single file) of static pod manifests.
	// Default "": no file source.
	ManifestPath string
	// ManifestResyncInterval is the period of the manifest folder's full
	// re-read that backs up its file watch. Default 20s
	// (source.DefaultFileResync).
	ManifestResyncInterval time.Duration
	// Sources are further pod sources. Default: none. An agent with neither
	// ManifestPath nor Sources runs no pod, but still terminates the pods
	// it finds in the runtime.
	Sources []Source
	// OnSourceError is called for every manifest or pod a source (or the
	// merge of sources) rejects, with a *source.Error. Default: the error is
	// only logged.
	OnSourceError func(error)

	// AdmitHandlers decide, in order, whether a new pod may run; the first
	// rejection wins. A rejected pod gets a Failed status with the handler's
	// reason and never reaches a pod worker. Default: every pod is admitted.
	AdmitHandlers []AdmitHandler
	// AllowedUnsafeSysctls are the sysctls beyond the safe ones that pods
	// may set (the kubelet's --allowed-unsafe-sysctls): names, or
	// patterns ending with '*' ("kernel.msg*"), each of the IPC or net
	// namespace. Before the AdmitHandlers, the agent rejects, as the
	// kubelet, a pod with a sysctl not allowed (SysctlForbidden), or whose
	// spec.os or kubernetes.io/os label is not the node's OS. Default:
	// the safe sysctls only (kernel.shm_rmid_forced,
	// net.ipv4.ip_local_port_range, ...).
	AllowedUnsafeSysctls []string

	// DisableProbes turns the pods' startup, liveness and readiness probes
	// off (runtime/prober): containers are then started and ready as soon
	// as they run, and never killed for a failed probe. Default false:
	// probes run; exec probes need a runtime that can exec (prober.Exec,
	// as runtime/cri), and liveness kills one that can kill a container
	// (ContainerKiller).
	DisableProbes bool
	// Probe, when set, runs every probe of every pod instead of the
	// prober's exec, HTTP, TCP and gRPC handlers (prober.Options.Probe):
	// for fake runtimes whose containers have no network and no process,
	// like the fleet's (agent/fleet). Default nil: the built-in handlers.
	Probe func(ctx context.Context, req prober.Request) (prober.Result, string)

	// Cluster makes the agent a node of a Kubernetes cluster: the Node and
	// its Lease, the pods bound to the node, mirror pods, statuses written
	// in the background, events (see Cluster). Default nil: no API server.
	Cluster *Cluster

	// Server serves the node's HTTPS API (package agent/server: logs,
	// exec, attach, port-forward, stats) for kubectl through the API
	// server. NodeName, Pods, Logger and a health check are the agent's
	// unless set here, and the runtime's logs, streams, commands and
	// stats when it offers them (runtime/cri does). agent.New binds the
	// port, and with Cluster the Node publishes it as its kubelet
	// endpoint (unless Cluster.Node.DaemonEndpointPort is set). Default
	// nil: no server.
	Server *server.Options

	// ContainerLogMaxSize is the size in bytes from which a running
	// container's log file is rotated (agent/logrotate; the kubelet's
	// containerLogMaxSize). Default 10 MiB; negative: no rotation. The
	// rotation runs only on a runtime that can give a container's log
	// file and reopen it (runtime/cri).
	ContainerLogMaxSize int64
	// ContainerLogMaxFiles is the most log files a container instance
	// keeps, the current one included (containerLogMaxFiles). Default 5;
	// at least 2.
	ContainerLogMaxFiles int
	// ContainerLogMonitorInterval is the period of the log rotation pass
	// (containerLogMonitorInterval). Default 10s.
	ContainerLogMonitorInterval time.Duration
	// ContainerLogMaxWorkers is how many containers the rotation checks
	// at once (containerLogMaxWorkers). Default 1.
	ContainerLogMaxWorkers int

	// MirrorClient creates and deletes the mirror pods of static pods in the
	// API server (podmanager/kubemirror). Default nil: no mirror pods.
	MirrorClient podmanager.MirrorClient
	// StatusReporter, when set, builds a reporter that receives every pod
	// status besides the agent's own in-memory one (see StatusReporter).
	// It is called once, by agent.New. Default nil: statuses are kept in
	// memory only (Agent.Status, Agent.Pods).
	StatusReporter func(pods PodStateProvider) (StatusReporter, error)

	// Recorder receives the agent's Kubernetes events about pods (FailedSync,
	// with the kubelet's reasons), for `kubectl describe pod`: an
	// agent/events.Recorder, or any client-go record.EventRecorder. Give the
	// same one to the runtime (cri.Options.Recorder) for the container
	// events. Default nil: no events.
	Recorder record.EventRecorder

	// Registerer receives the pod lifecycle metrics (package metrics). The
	// agent never uses the process-wide default Prometheus registry. Default nil: no metrics.
	Registerer prometheus.Registerer
	// MetricsNamespace prefixes every metric name. Default "kubelet"
	// (metrics.DefaultNamespace), for kubelet dashboards.
	MetricsNamespace string

	// Logger receives the agent's logs: errors, V(2) pod lifecycle
	// transitions, V(4) detail. The zero value discards.
	Logger logr.Logger
	// Clock drives every timer of the agent: housekeeping, relist, pod
	// worker resyncs and back-offs, the manifest re-read. Default: the real
	// clock.
	Clock clock.WithTicker

	// HousekeepingInterval is the period of the housekeeping pass (see
	// Agent.Housekeeping). Default 2s.
	HousekeepingInterval time.Duration
	// RelistInterval is the period of the runtime relist that refreshes the
	// status cache and wakes the pods whose containers changed, counted
	// from the end of one relist to the start of the next (as the
	// kubelet's PLEG). Every pod
	// transition waits for a relist newer than the previous sync; a pod
	// worker that has to wait asks for one at once (RelistKickInterval), so
	// this bounds the latency of a step only when such relists are off.
	// Default 1s.
	RelistInterval time.Duration
	// RelistKickInterval spaces the relists that waiting pod workers ask
	// for (runtime.RelisterOptions.MinKickInterval): at least this long, and
	// three times the last relist's duration, between two relist starts.
	// Default 100 ms; negative: relists only every RelistInterval, as the
	// kubelet's PLEG (each step of a pod's life then waits up to a
	// RelistInterval for its status).
	RelistKickInterval time.Duration
	// RelistWorkers is how many changed pods a relist inspects at once
	// (runtime.RelisterOptions.Workers). Default 8.
	RelistWorkers int
	// ResyncInterval is how often a running pod is synced again
	// (podworker.Options.ResyncInterval). Default 1m.
	ResyncInterval time.Duration
	// BackOffPeriod is the delay before a failed Syncer call is retried
	// (podworker.Options.BackOffPeriod). Default 10s.
	BackOffPeriod time.Duration
	// MaxBackOffPeriod, when larger than BackOffPeriod, makes the retry delay
	// double with each consecutive failure of a pod up to this value.
	// Default: equal to BackOffPeriod.
	MaxBackOffPeriod time.Duration
	// StatusWaitTimeout bounds a pod worker's wait for a status newer than
	// its previous sync (podworker.Options.StatusWaitTimeout). Default 30s.
	StatusWaitTimeout time.Duration

	// NodeIPs returns the node's IPs, primary first (e.g. from the node
	// controller's addresses). They become the hostIP/hostIPs of every pod
	// status, and the podIPs of pods on the node's network. It is called at
	// every status generation, so it must be cheap and safe for concurrent
	// use. Default nil: pod statuses carry no hostIP.
	NodeIPs func() []string

	// Container garbage collection (agent/gc; the kubelet's containerGC).

	// ContainerGCPeriod is the period of the container garbage
	// collection pass (the kubelet's ContainerGCPeriod). Default 1m;
	// negative: no container garbage collection. It runs only on a
	// runtime that can remove containers and sandboxes one by one
	// (runtime/cri).
	ContainerGCPeriod time.Duration
	// ContainerGCPolicy: how long a dead container of a live pod stays at
	// least (MinAge, --minimum-container-ttl-duration, default 0), how
	// many dead instances each container keeps (MaxPerPodContainer,
	// --maximum-dead-containers-per-container, default 1; negative: no
	// limit) and the node at most (MaxContainers,
	// --maximum-dead-containers, default -1: no limit). Everything dead
	// of deleted pods goes anyway, and nothing of a terminating pod.
	ContainerGCPolicy gc.Policy
	// ContainerGCKeepNoDeadInstance makes MaxPerPodContainer 0: no dead
	// instance kept (nor its logs for kubectl logs --previous).
	ContainerGCKeepNoDeadInstance bool
	// Image garbage collection (agent/imagegc) and the Node's image list,
	// with the kubelet's names. The image manager runs on a runtime that
	// lists and removes images (runtime/cri) and, unless ImageFsStats is
	// set, tells the usage of its image file system.
	//
	// ImageGCHighThresholdPercent is the image file system usage (percent)
	// from which unused images are removed. Default 85; 100: no periodic
	// collection (the Node's image list and DeleteUnusedImages remain);
	// negative: no image manager at all.
	ImageGCHighThresholdPercent int
	// ImageGCLowThresholdPercent is the usage a collection frees down to.
	// Default 80.
	ImageGCLowThresholdPercent int
	// ImageMinimumGCAge: an image is kept at least that long after it was
	// first seen. Default 2m; negative: none.
	ImageMinimumGCAge time.Duration
	// ImageMaximumGCAge: an image unused for that long is removed whatever
	// the usage. Default 0: never.
	ImageMaximumGCAge time.Duration
	// ImageGCPinnedImages are never removed, besides what the runtime pins
	// (the sandbox image, when the runtime does not pin it). Default none.
	ImageGCPinnedImages []string
	// ImageFsStats tells the image file system's capacity and availability
	// (for images kept elsewhere than a local file system, or a fake
	// runtime). Default: the runtime's ImageFsInfo and statfs of its
	// mount point.
	ImageFsStats imagegc.StatsFunc
	// Eviction (agent/eviction) ---------------------------------------

	// Eviction runs the kubelet's eviction manager with these options:
	// under memory, disk or PID pressure it sets the Node's pressure
	// conditions (with Cluster), refuses new pods as the kubelet does, and
	// evicts pods (phase Failed, reason Evicted, a DisruptionTarget
	// condition, an event); pods over an emptyDir sizeLimit or an
	// ephemeral-storage limit are evicted too. The agent supplies
	// ActivePods, Evict and PodCleanedUp, and, unless set: NodeStats (this
	// machine, the node file system being that of the runtime's volume
	// root), PodStats (the runtime's, with the disk usage of the pods'
	// emptyDirs and logs), Recorder, NodeRef, Clock, Logger, Registerer
	// and MetricsNamespace. Thresholds nil means the kubelet's default hard
	// thresholds. Default nil: no eviction manager, and the pressure
	// conditions stay False (examples/nodeagent runs one by default).
	Eviction *eviction.Options
	// Graceful node shutdown (agent/shutdown), opt-in; Agent.ShutdownNode
	// carries it out.

	// ShutdownGracePeriod is the time a node shutdown may take (the
	// kubelet's shutdownGracePeriod): pods below the system-critical
	// priority get ShutdownGracePeriod - ShutdownGracePeriodCriticalPods,
	// then critical pods get ShutdownGracePeriodCriticalPods. Whole
	// seconds. Default 0: no graceful node shutdown (unless
	// ShutdownGracePeriodByPodPriority is set).
	ShutdownGracePeriod time.Duration
	// ShutdownGracePeriodCriticalPods is the part of ShutdownGracePeriod
	// kept for critical pods (shutdownGracePeriodCriticalPods). Default 0.
	ShutdownGracePeriodCriticalPods time.Duration
	// ShutdownGracePeriodByPodPriority, when set, gives the shutdown's
	// groups instead (shutdownGracePeriodByPodPriority); ShutdownGracePeriod
	// and ShutdownGracePeriodCriticalPods must then be 0. Default none.
	ShutdownGracePeriodByPodPriority []shutdown.PriorityGracePeriod
	// ShutdownStateFile keeps the last shutdown's times across restarts,
	// for the metrics (the kubelet's ROOT/graceful_node_shutdown_state).
	// Default "": not kept.
	ShutdownStateFile string
}

// withDefaults returns a copy of o with every default applied.
func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.ManifestResyncInterval == 0 {
		o.ManifestResyncInterval = source.DefaultFileResync
	}
	if o.HousekeepingInterval == 0 {
		o.HousekeepingInterval = DefaultHousekeepingInterval
	}
	if o.RelistInterval == 0 {
		o.RelistInterval = DefaultRelistInterval
	}
	return o
}

// validate rejects options that cannot work.
func (o Options) validate() error {
	var errs []error
	if o.Runtime == nil {
		errs = append(errs, errors.New("Runtime is required"))
	}
	if o.NodeName == "" {
		errs = append(errs, errors.New("NodeName is required"))
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{
		{"ManifestResyncInterval", o.ManifestResyncInterval},
		{"HousekeepingInterval", o.HousekeepingInterval},
		{"RelistInterval", o.RelistInterval},
		{"ResyncInterval", o.ResyncInterval},
		{"BackOffPeriod", o.BackOffPeriod},
		{"MaxBackOffPeriod", o.MaxBackOffPeriod},
		{"StatusWaitTimeout", o.StatusWaitTimeout},
		{"ContainerLogMonitorInterval", o.ContainerLogMonitorInterval},
	} {
		if d.d < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, got %s", d.name, d.d))
		}
	}
	if o.RelistWorkers < 0 {
		errs = append(errs, fmt.Errorf("RelistWorkers must not be negative, got %d", o.RelistWorkers))
	}
	if o.ContainerLogMaxFiles != 0 && o.ContainerLogMaxFiles < 2 {
		errs = append(errs, fmt.Errorf("ContainerLogMaxFiles must be at least 2, got %d", o.ContainerLogMaxFiles))
	}
	if o.ContainerLogMaxWorkers < 0 {
		errs = append(errs, fmt.Errorf("ContainerLogMaxWorkers must not be negative, got %d", o.ContainerLogMaxWorkers))
	}
	names := map[string]bool{}
	if o.ManifestPath != "" {
		names[podmanager.FileSource] = true
	}
	for i, s := range o.Sources {
		switch {
		case s.Name == "":
			errs = append(errs, fmt.Errorf("Sources[%d]: Name is required", i))
		case names[s.Name]:
			errs = append(errs, fmt.Errorf("Sources[%d]: source %q given twice", i, s.Name))
		case s.New == nil:
			errs = append(errs, fmt.Errorf("Sources[%d] (%s): New is required", i, s.Name))
		}
		names[s.Name] = true
	}
	if _, err := sysctl.NewAllowlist(o.AllowedUnsafeSysctls); err != nil {
		errs = append(errs, fmt.Errorf("AllowedUnsafeSysctls: %w", err))
	}
	for i, h := range o.AdmitHandlers {
		if h == nil {
			errs = append(errs, fmt.Errorf("AdmitHandlers[%d] is nil", i))
		}
	}
	errs = append(errs, o.validateCluster()...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("agent: invalid options: %w", err)
	}
	return nil
}
