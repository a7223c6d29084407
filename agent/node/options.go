package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/internal/validate"
	"github.com/podlife/podlife/runtime"
)

// Defaults of Options, the kubelet's.
const (
	DefaultLeaseDuration         = 40 * time.Second
	DefaultLeaseRenewInterval    = 10 * time.Second // a quarter of the lease duration
	DefaultStatusUpdateFrequency = 10 * time.Second
	DefaultStatusReportFrequency = 5 * time.Minute
	DefaultMaxBackOff            = 7 * time.Second
	DefaultDaemonEndpointPort    = 10250
	DefaultMaxPods               = 110
	// initialBackOff is the first retry delay after an API error.
	initialBackOff = 200 * time.Millisecond
	// runtimeCallTimeout bounds the runtime's Status and Version calls.
	runtimeCallTimeout = 5 * time.Second
)

// RuntimeInfo is what the Controller asks of the container runtime:
// whether it is ready (the Ready condition) and its name and version
// (nodeInfo). podlife's runtime.Runtime implementations satisfy it.
type RuntimeInfo interface {
	Status(ctx context.Context) (*runtime.Status, error)
	Version(ctx context.Context) (*runtime.VersionInfo, error)
}

// Provider lets an agent that runs pods somewhere else than a container
// runtime on this machine (VMs, WASM, a remote cluster) describe its node,
// as a virtual-kubelet provider does. ConfigureNode is called with the
// status the Controller is about to write (capacity, allocatable,
// addresses, conditions and nodeInfo filled in from Options and the
// machine) at registration and at every status update, and may change any
// of it. Conditions it sets are kept as set; the Controller only keeps
// their lastTransitionTime and sets their lastHeartbeatTime. An error keeps
// the previous status and is retried at the next update.
type Provider interface {
	ConfigureNode(ctx context.Context, status *v1.NodeStatus) error
}

// ProviderFunc adapts a function to a Provider.
type ProviderFunc func(ctx context.Context, status *v1.NodeStatus) error

// ConfigureNode calls f.
func (f ProviderFunc) ConfigureNode(ctx context.Context, status *v1.NodeStatus) error {
	return f(ctx, status)
}

var _ Provider = ProviderFunc(nil)

// PressureSource reports the node's resource pressure, as the kubelet's
// eviction manager does for its node conditions; *eviction.Manager
// implements it. Its methods are called at every status update and must
// be cheap.
type PressureSource interface {
	IsUnderMemoryPressure() bool
	IsUnderDiskPressure() bool
	IsUnderPIDPressure() bool
}

// Options configure a Controller. Client and NodeName are required; every
// other field's zero value means its documented default.
type Options struct {
	// Client talks to the API server, with the node's own credentials
	// (user system:node:NAME): everything the Controller writes is allowed
	// to it under the Node authorizer and NodeRestriction. Required.
	Client kubernetes.Interface
	// NodeName is the Node's name, a DNS-1123 subdomain. Required.
	NodeName string
	// Runtime gives the Ready condition (its RuntimeReady condition) and
	// the runtime's name and version. Default nil: Ready is True unless the
	// Provider says otherwise, and containerRuntimeVersion is empty.
	Runtime RuntimeInfo
	// RequireNetworkReady makes the runtime's NetworkReady condition part
	// of Ready, as for a kubelet with a CNI network. Default false: podlife
	// runs pods in the node's network when there is no pod network.
	RequireNetworkReady bool
	// Provider adjusts the node status before every write. Default nil.
	Provider Provider
	// Images gives status.images before every status update (before the
	// Provider), as the kubelet's image list: agent/imagegc's
	// Manager.NodeImages (the 50 largest images, up to 5 names each).
	// Default nil: the status lists no images.
	Images func() []v1.ContainerImage
	// Pressure gives the MemoryPressure, DiskPressure and PIDPressure
	// conditions (the eviction manager, agent/eviction): True, with the
	// kubelet's reasons, while it says so. Default nil: always False.
	Pressure PressureSource

	// Labels are added to the Node's at registration and adoption, beside
	// kubernetes.io/hostname, kubernetes.io/os and kubernetes.io/arch.
	// NodeRestriction refuses most labels under kubernetes.io and k8s.io;
	// validation refuses them here first.
	Labels map[string]string
	// Taints are set on the Node when the Controller creates it. An
	// existing Node keeps its taints (NodeRestriction forbids a node to
	// change its own).
	Taints []v1.Taint
	// Capacity overrides the machine's: pods (default 110), cpu (default
	// the CPUs of this machine), memory (default MemTotal), and
	// ephemeral-storage (default the size of the file system of
	// EphemeralStoragePath). Other resources are added as given.
	Capacity v1.ResourceList
	// Allocatable overrides, resource by resource, what is allocatable.
	// Default: the capacity.
	Allocatable v1.ResourceList
	// EphemeralStoragePath is the folder whose file system gives the
	// ephemeral-storage capacity. Default "/".
	EphemeralStoragePath string
	// Addresses are the Node's addresses. Default: InternalIP, the first
	// global unicast IPv4 address of the machine (127.0.0.1 when there is
	// none), and Hostname, the machine's host name.
	Addresses []v1.NodeAddress
	// DaemonEndpointPort is the port published as the kubelet endpoint
	// (status.daemonEndpoints). Default 10250.
	DaemonEndpointPort int32
	// KubeletVersion is nodeInfo.kubeletVersion. Default: podlife's
	// version (Version()).
	KubeletVersion string

	// LeaseDuration is the Lease's leaseDurationSeconds. Default 40s.
	LeaseDuration time.Duration
	// LeaseRenewInterval is how often the Lease is renewed. Default 10s.
	LeaseRenewInterval time.Duration
	// StatusUpdateFrequency is how often the status is computed and, when
	// it changed, written. Default 10s.
	StatusUpdateFrequency time.Duration
	// StatusReportFrequency is how often the status is written even when
	// nothing changed. Default 5m.
	StatusReportFrequency time.Duration
	// MaxBackOff bounds the delay between retries of a failed API call
	// (the first is 200ms, doubling, jittered). Default 7s.
	MaxBackOff time.Duration

	// Logger: V(2) for registration and condition changes, V(4) for every
	// write. The zero value discards.
	Logger logr.Logger
	// Clock paces every timer. Default: the real clock.
	Clock clock.WithTicker
	// Rand returns numbers in [0, 1) for the back-off jitter. Default: a
	// source private to the Controller.
	Rand func() float64
	// Registerer receives the Controller's metrics. Default nil: none.
	Registerer prometheus.Registerer
	// MetricsNamespace prefixes their names. Default "podlife".
	MetricsNamespace string
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.EphemeralStoragePath == "" {
		o.EphemeralStoragePath = "/"
	}
	if o.DaemonEndpointPort == 0 {
		o.DaemonEndpointPort = DefaultDaemonEndpointPort
	}
	if o.KubeletVersion == "" {
		o.KubeletVersion = Version()
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.LeaseRenewInterval == 0 {
		o.LeaseRenewInterval = DefaultLeaseRenewInterval
	}
	if o.StatusUpdateFrequency == 0 {
		o.StatusUpdateFrequency = DefaultStatusUpdateFrequency
	}
	if o.StatusReportFrequency == 0 {
		o.StatusReportFrequency = DefaultStatusReportFrequency
	}
	if o.MaxBackOff == 0 {
		o.MaxBackOff = DefaultMaxBackOff
	}
	if o.MetricsNamespace == "" {
		o.MetricsNamespace = "podlife"
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.Client == nil {
		errs = append(errs, errors.New("Client is required"))
	}
	if o.NodeName == "" {
		errs = append(errs, errors.New("NodeName is required"))
	} else if msgs := validation.IsDNS1123Subdomain(o.NodeName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("NodeName %q: %s", o.NodeName, strings.Join(msgs, ", ")))
	}
	for k, v := range o.Labels {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("Labels: key %q: %s", k, strings.Join(msgs, ", ")))
		} else if !nodeMaySetLabel(k) {
			errs = append(errs, fmt.Errorf("Labels: key %q: a node may not set it on itself (NodeRestriction allows kubernetes.io and k8s.io labels only under kubelet.kubernetes.io/, node.kubernetes.io/ and the well-known topology, hostname, os, arch and instance-type keys)", k))
		}
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("Labels: value %q of %q: %s", v, k, strings.Join(msgs, ", ")))
		}
	}
	for i, t := range o.Taints {
		if msgs := validation.IsQualifiedName(t.Key); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("Taints[%d]: key %q: %s", i, t.Key, strings.Join(msgs, ", ")))
		}
		switch t.Effect {
		case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
		default:
			errs = append(errs, fmt.Errorf("Taints[%d]: effect %q: must be NoSchedule, PreferNoSchedule or NoExecute", i, t.Effect))
		}
	}
	errs = append(errs, validate.Durations(
		validate.Field("LeaseDuration", o.LeaseDuration), validate.Field("LeaseRenewInterval", o.LeaseRenewInterval),
		validate.Field("StatusUpdateFrequency", o.StatusUpdateFrequency), validate.Field("StatusReportFrequency", o.StatusReportFrequency),
		validate.Field("MaxBackOff", o.MaxBackOff))...)
	if o.LeaseDuration > 0 && o.LeaseDuration < time.Second {
		errs = append(errs, fmt.Errorf("LeaseDuration must be at least 1s, got %s", o.LeaseDuration))
	}
	if o.LeaseRenewInterval > 0 && o.LeaseDuration > 0 && o.LeaseRenewInterval >= o.LeaseDuration {
		errs = append(errs, fmt.Errorf("LeaseRenewInterval %s must be shorter than LeaseDuration %s", o.LeaseRenewInterval, o.LeaseDuration))
	}
	errs = append(errs, validate.NonNegative(validate.Field("DaemonEndpointPort", o.DaemonEndpointPort))...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("node: invalid options: %w", err)
	}
	return nil
}

// nodeMaySetLabel reports whether NodeRestriction lets a node set the
// label key on its own Node: any key outside the kubernetes.io and k8s.io
// namespaces, and within them only the kubelet's own.
func nodeMaySetLabel(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return true
	}
	if prefix == "node-restriction.kubernetes.io" || strings.HasSuffix(prefix, ".node-restriction.kubernetes.io") {
		return false
	}
	inK8s := prefix == "kubernetes.io" || strings.HasSuffix(prefix, ".kubernetes.io") || prefix == "k8s.io" || strings.HasSuffix(prefix, ".k8s.io")
	if !inK8s {
		return true
	}
	switch prefix {
	case "kubelet.kubernetes.io", "node.kubernetes.io":
		return true
	}
	if strings.HasSuffix(prefix, ".kubelet.kubernetes.io") || strings.HasSuffix(prefix, ".node.kubernetes.io") {
		return true
	}
	switch key {
	case v1.LabelHostname, v1.LabelOSStable, v1.LabelArchStable,
		v1.LabelInstanceType, v1.LabelInstanceTypeStable,
		v1.LabelFailureDomainBetaRegion, v1.LabelFailureDomainBetaZone,
		v1.LabelTopologyRegion, v1.LabelTopologyZone,
		"beta.kubernetes.io/os", "beta.kubernetes.io/arch":
		return true
	}
	return false
}
