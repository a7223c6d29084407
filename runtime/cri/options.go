package cri

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/internal/validate"
	"github.com/podlife/podlife/runtime"
)

// NetworkMode chooses the network namespace of the sandboxes podlife creates.
type NetworkMode int

const (
	// NetworkModeNode puts every pod in the node's network namespace and sets
	// no hostname. It is the default, and the only mode that works with a
	// runtime that has no CNI network configured.
	NetworkModeNode NetworkMode = iota
	// NetworkModePod follows pod.Spec.HostNetwork: pods that do not ask for
	// the host network get their own namespace from the runtime's CNI, and
	// their name as hostname.
	NetworkModePod
)

// Defaults of Options.
const (
	DefaultTimeout          = 2 * time.Minute // the kubelet's --runtime-request-timeout
	DefaultImagePullTimeout = 10 * time.Minute
	DefaultCgroupParent     = "/podlife"
	DefaultBackOffInitial   = 10 * time.Second
	DefaultBackOffMax       = 5 * time.Minute
	// DefaultImagePullBackOffInitial and DefaultImagePullBackOffMax are the
	// kubelet's image pull back-off.
	DefaultImagePullBackOffInitial = 10 * time.Second
	DefaultImagePullBackOffMax     = 300 * time.Second
	DefaultReconnectMaxDelay       = 2 * time.Second
	DefaultGracePeriod             = int64(30) // seconds, when neither pod nor labels say
	DefaultMaxMessageSize          = 16 << 20  // bytes, the kubelet's CRI client limit
	// DefaultSeccompProfileRoot is the kubelet's folder of Localhost
	// seccomp profiles.
	DefaultSeccompProfileRoot = "/var/lib/kubelet/seccomp"
	// DefaultClusterDomain is the DNS domain of nearly every cluster.
	DefaultClusterDomain = "cluster.local"
	// MinimumGracePeriod is the floor of every container stop, in seconds,
	// as in the kubelet.
	MinimumGracePeriod = int64(2)
)

// Options configures a Runtime.
type Options struct {
	// Endpoint of the CRI runtime, "unix:///absolute/path.sock". Required
	// unless Dialer or Conn is set (then it only names the target in
	// errors).
	Endpoint string
	// Dialer, when set, opens every connection (for an in-memory server such
	// as fakecri.Server.DialContext).
	Dialer func(ctx context.Context, addr string) (net.Conn, error)
	// Conn, when set, carries every call instead of a gRPC connection that
	// the Runtime makes: for a runtime in the same process that needs no
	// transport, such as fakecri.Server.Conn. The Runtime applies its
	// MaxMessageSize and its operation metrics to each call; Close does
	// not close Conn. Dialer and ReconnectMaxDelay are then unused.
	Conn grpc.ClientConnInterface
	// Timeout of every CRI call except image pulls and container stops
	// (which get the grace period on top). Default 2m.
	Timeout time.Duration
	// ImagePullTimeout of one PullImage call. Default 10m.
	ImagePullTimeout time.Duration
	// ReconnectMaxDelay caps the wait between two connection attempts after
	// the runtime went away, so that podlife notices a restarted runtime
	// quickly. While disconnected, calls fail at once with
	// runtime.ErrUnavailable. Default 2s.
	ReconnectMaxDelay time.Duration
	// RuntimeHandler passed to RunPodSandbox ("" = the runtime's default).
	RuntimeHandler string
	// CgroupParent under which every pod gets its own cgroup,
	// CgroupParent + "/pod" + UID (cgroupfs form). Default "/podlife".
	// Sandboxes need a cgroup parent for the runtime's pod stats to work.
	CgroupParent string
	// NetworkMode of the sandboxes. Default NetworkModeNode.
	NetworkMode NetworkMode
	// BackOffInitial is the first crash-loop back-off of a container; it
	// doubles at every restart up to BackOffMax. Defaults 10s and 5m.
	BackOffInitial time.Duration
	BackOffMax     time.Duration
	// ImagePullBackOffInitial is how long, after a failed pull of an image
	// for a pod, the pod's syncs do not pull it again (its containers wait
	// in ImagePullBackOff); it doubles at every failed pull up to
	// ImagePullBackOffMax, per pod and image, as the kubelet's. Defaults
	// 10s and 300s.
	ImagePullBackOffInitial time.Duration
	ImagePullBackOffMax     time.Duration
	// Clock paces the crash-loop and image pull back-offs and times the
	// CRI calls for the operation metrics. Default: the real clock. (Call
	// deadlines are gRPC
	// deadlines and use real time.)
	Clock clock.Clock
	// Logger. The zero value discards.
	Logger logr.Logger
	// MaxMessageSize bounds each gRPC message sent or received, in bytes.
	// Default 16 MiB (DefaultMaxMessageSize), the kubelet's. A listing of
	// all containers is one message of roughly 0.5 KiB per container, so a
	// node with more than about 30,000 containers needs more.
	MaxMessageSize int

	// VolumeRoot is the folder under which the adapter keeps what it makes
	// on the host for a pod, in VolumeRoot/UID (moved aside by RemovePod and
	// deleted in the background; see the package documentation): its
	// emptyDir volumes (VolumeRoot/UID/volumes/kubernetes.io~empty-dir/NAME),
	// the termination-message files mounted into its containers, and the
	// container logs the runtime writes (VolumeRoot/UID/logs). Default
	// DefaultVolumeRoot() (os.TempDir()/podlife-volumes), created when first
	// needed. It must be absolute, and visible to the runtime at the same
	// path (the runtime bind-mounts from it).
	VolumeRoot string
	// PodLogsDir, when set, is where the container logs go instead of
	// VolumeRoot/UID/logs: PodLogsDir/NAMESPACE_NAME_UID/CONTAINER/N.log,
	// the kubelet's podLogsDir layout (its default /var/log/pods), which log
	// shippers read. RemovePod removes a pod's folder there too. Default
	// "": the logs stay in the pod's folder. Must be absolute, and visible
	// to the runtime at the same path (it writes the logs).
	PodLogsDir string
	// NodeMemoryCapacity, in bytes, is the node's memory as the OOM score
	// of Burstable containers is computed from it (the kubelet's
	// 1000 - 1000*request/capacity). Default: MemTotal of /proc/meminfo,
	// read once by New; when it cannot be read, Burstable containers get
	// 999.
	NodeMemoryCapacity int64
	// SeccompProfileRoot is the folder of Localhost seccomp profiles: a
	// localhostProfile "p.json" is passed to the runtime as
	// SeccompProfileRoot/p.json. Default /var/lib/kubelet/seccomp, the
	// kubelet's, so that profiles installed for it serve podlife too.
	SeccompProfileRoot string
	// ClusterDomain is the cluster's DNS domain (the kubelet's
	// --cluster-domain): a pod with a subdomain has the FQDN
	// HOSTNAME.SUBDOMAIN.NAMESPACE.svc.CLUSTERDOMAIN in its managed
	// /etc/hosts, and as its hostname with setHostnameAsFQDN. Default
	// "cluster.local".
	ClusterDomain string

	// Registerer receives the kubelet's runtime operation metrics
	// (runtime_operations_total, runtime_operations_errors_total and
	// runtime_operations_duration_seconds, by operation_type) of every
	// CRI call. Default nil: none.
	Registerer prometheus.Registerer
	// MetricsNamespace prefixes their names. Default "kubelet"
	// (DefaultMetricsNamespace).
	MetricsNamespace string

	// meminfo is the file NodeMemoryCapacity defaults from (a test seam).
	// Default /proc/meminfo.
	meminfo string
	// etcHosts is the node's hosts file, for pods on the node's network
	// (a test seam). Default /etc/hosts.
	etcHosts string

	// Started, when set, tells whether a running sidecar (a restartable
	// init container) has started, i.e. passed its startup probe
	// (runtime/prober's Manager.Started): the next init container waits
	// for it. Default nil: a running sidecar has started.
	Started func(podUID types.UID, containerName string) bool
}

func (o Options) withDefaults() Options {
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MetricsNamespace == "" {
		o.MetricsNamespace = DefaultMetricsNamespace
	}
	if o.ImagePullTimeout == 0 {
		o.ImagePullTimeout = DefaultImagePullTimeout
	}
	if o.ReconnectMaxDelay == 0 {
		o.ReconnectMaxDelay = DefaultReconnectMaxDelay
	}
	if o.CgroupParent == "" {
		o.CgroupParent = DefaultCgroupParent
	}
	if o.BackOffInitial == 0 {
		o.BackOffInitial = DefaultBackOffInitial
	}
	if o.BackOffMax == 0 {
		o.BackOffMax = DefaultBackOffMax
	}
	if o.ImagePullBackOffInitial == 0 {
		o.ImagePullBackOffInitial = DefaultImagePullBackOffInitial
	}
	if o.ImagePullBackOffMax == 0 {
		o.ImagePullBackOffMax = DefaultImagePullBackOffMax
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.MaxMessageSize == 0 {
		o.MaxMessageSize = DefaultMaxMessageSize
	}
	if o.VolumeRoot == "" {
		o.VolumeRoot = DefaultVolumeRoot()
	}
	if o.SeccompProfileRoot == "" {
		o.SeccompProfileRoot = DefaultSeccompProfileRoot
	}
	if o.ClusterDomain == "" {
		o.ClusterDomain = DefaultClusterDomain
	}
	if o.etcHosts == "" {
		o.etcHosts = etcHostsPath
	}
	if o.meminfo == "" {
		o.meminfo = "/proc/meminfo"
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.Dialer == nil && o.Conn == nil {
		if err := validateEndpoint(o.Endpoint); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, validate.Durations(
		validate.Field("Timeout", o.Timeout), validate.Field("ImagePullTimeout", o.ImagePullTimeout),
		validate.Field("ReconnectMaxDelay", o.ReconnectMaxDelay),
		validate.Field("BackOffInitial", o.BackOffInitial), validate.Field("BackOffMax", o.BackOffMax),
		validate.Field("ImagePullBackOffInitial", o.ImagePullBackOffInitial), validate.Field("ImagePullBackOffMax", o.ImagePullBackOffMax))...)
	errs = append(errs, validate.NonNegative(validate.Field("MaxMessageSize", o.MaxMessageSize))...)
	if o.BackOffMax < o.BackOffInitial {
		errs = append(errs, fmt.Errorf("BackOffMax (%s) must not be below BackOffInitial (%s)", o.BackOffMax, o.BackOffInitial))
	}
	if o.ImagePullBackOffMax < o.ImagePullBackOffInitial {
		errs = append(errs, fmt.Errorf("ImagePullBackOffMax (%s) must not be below ImagePullBackOffInitial (%s)", o.ImagePullBackOffMax, o.ImagePullBackOffInitial))
	}
	if !strings.HasPrefix(o.CgroupParent, "/") {
		errs = append(errs, fmt.Errorf("CgroupParent must be an absolute cgroupfs path, got %q", o.CgroupParent))
	}
	if !filepath.IsAbs(o.VolumeRoot) {
		errs = append(errs, fmt.Errorf("VolumeRoot must be an absolute path, got %q", o.VolumeRoot))
	}
	if o.PodLogsDir != "" && !filepath.IsAbs(o.PodLogsDir) {
		errs = append(errs, fmt.Errorf("PodLogsDir must be an absolute path, got %q", o.PodLogsDir))
	}
	if !filepath.IsAbs(o.SeccompProfileRoot) {
		errs = append(errs, fmt.Errorf("SeccompProfileRoot must be an absolute path, got %q", o.SeccompProfileRoot))
	}
	if msgs := validation.IsDNS1123Subdomain(o.ClusterDomain); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("ClusterDomain %q is not a DNS subdomain: %s", o.ClusterDomain, strings.Join(msgs, "; ")))
	}
	errs = append(errs, validate.NonNegative(validate.Field("NodeMemoryCapacity", o.NodeMemoryCapacity))...)
	if o.NetworkMode != NetworkModeNode && o.NetworkMode != NetworkModePod {
		errs = append(errs, fmt.Errorf("unknown NetworkMode %d", o.NetworkMode))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid cri options: %w", errors.Join(runtime.ErrInvalidArgument, err))
	}
	return nil
}

// validateEndpoint accepts "unix:///absolute/path" only.
func validateEndpoint(ep string) error {
	path, ok := strings.CutPrefix(ep, "unix://")
	switch {
	case ep == "":
		return errors.New("Endpoint is required (unix:///path/to/cri.sock)")
	case !ok:
		return fmt.Errorf("Endpoint %q: only unix:// endpoints are supported (unix:///path/to/cri.sock)", ep)
	case !strings.HasPrefix(path, "/"):
		return fmt.Errorf("Endpoint %q: the socket path must be absolute (unix:///path/to/cri.sock)", ep)
	case len(path) > 107:
		return fmt.Errorf("Endpoint %q: unix socket paths are limited to 107 bytes", ep)
	}
	return nil
}
