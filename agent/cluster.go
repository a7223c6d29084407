package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/podlife/podlife/agent/credentials"
	"github.com/podlife/podlife/agent/envvars"
	"github.com/podlife/podlife/agent/events"
	"github.com/podlife/podlife/agent/node"
	"github.com/podlife/podlife/agent/status"
	"github.com/podlife/podlife/agent/volume"
	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/podmanager/kubemirror"
	"github.com/podlife/podlife/podmanager/source"
	"github.com/podlife/podlife/runtime"
)

// Cluster makes an agent a node of a Kubernetes cluster (Options.Cluster),
// as a kubelet is: it registers the Node and keeps its Lease and status
// (package agent/node), runs the pods bound to the node (an API pod
// source), creates the mirror pods of its static pods (podmanager/kubemirror),
// writes pod statuses in the background and deletes finished pods (package
// agent/status), and records events (package agent/events).
type Cluster struct {
	// Client talks to the API server with the node's own credentials (user
	// system:node:NAME; see node.LoadClientConfig for the kubelet's client
	// settings). Required.
	Client kubernetes.Interface
	// EventClient sends the events. Default: Client. The kubelet gives
	// events a client of their own, so that they never use the share of
	// the status writes.
	EventClient kubernetes.Interface

	// Labels and Taints are set on the Node at registration
	// (node.Options.Labels and Taints).
	Labels map[string]string
	Taints []v1.Taint
	// Node configures the Node further. Client, NodeName, Runtime, Labels,
	// Taints, Logger, Clock and Registerer are the agent's unless set here.
	Node node.Options
	// SkipNode leaves the Node and its Lease to the embedding program (a
	// virtual-kubelet-style agent that keeps its own); the agent then
	// neither registers nor reports it.
	SkipNode bool

	// Status configures the status manager further. Client, PodStates,
	// Pods, Logger, Clock and Registerer are the agent's unless set here.
	Status status.Options
	// Events configures the event recorder further (QPS and Burst, the
	// kubelet's --event-qps and --event-burst, say). Client is EventClient,
	// and NodeName, Logger, Clock and Registerer are the agent's, unless
	// set here. Unused when Options.Recorder is given.
	Events events.Options

	// Volumes configures the volume manager (agent/volume): configMap,
	// secret, downwardAPI and projected volumes and memory emptyDirs, set
	// up for the runtime when it takes a container options provider
	// (runtime/cri's SetContainerOptionsProvider), together with the
	// environment of agent/envvars and the image pull credentials of the
	// pods' imagePullSecrets (agent/credentials: a GET of each Secret at
	// each pull, with Client). Client, Logger and Clock are the agent's
	// unless set here; Root defaults to os.TempDir()/podlife-pod-volumes;
	// Allocatable (also the environment's) to the node controller's
	// Allocatable.
	Volumes volume.Options
	// SkipContainerOptions leaves the runtime without a container options
	// provider: pods run with what their spec alone describes, as without
	// an API server.
	SkipContainerOptions bool
	// Services, when set, gives the Services of the containers' service
	// variables (agent/envvars) in place of the agent's own list and watch
	// of every Service, so that many agents of one process can share one
	// watch (agent/fleet does). The caller runs it (an
	// envvars.WatchingReader's Run) while the agent runs; the agent neither
	// makes nor runs a watch then. It must hold only what the node may read:
	// the Node authorizer lets every node list and watch all Services,
	// unlike pods, its Node, ConfigMaps and Secrets, which the agent still
	// reads with Client. Default nil: the agent watches the Services with
	// Client.
	Services envvars.ServiceReader
}

// clusterParts are what Options.Cluster adds to an agent.
type clusterParts struct {
	node   *node.Controller // nil with SkipNode
	status *status.Manager
	events *events.Recorder // nil when Options.Recorder was given
	// volumes is nil with SkipContainerOptions or a runtime that takes no
	// container options provider.
	volumes *volume.Manager
	// services is the agent's own watch of the Services, which feeds the
	// service variables; nil when volumes is or with Cluster.Services.
	services *envvars.WatchingReader
}

// sharedServices reads ConfigMaps and Secrets with the node's client, and
// Services from Cluster.Services.
type sharedServices struct {
	envvars.ClientReader // ConfigMap and Secret
	services             envvars.ServiceReader
}

var _ envvars.Reader = sharedServices{}

// Services implements envvars.Reader.
func (r sharedServices) Services(ctx context.Context, namespace string) ([]*v1.Service, error) {
	return r.services.Services(ctx, namespace)
}

// validateCluster rejects options that cannot go with Options.Cluster.
func (o Options) validateCluster() []error {
	c := o.Cluster
	if c == nil {
		return nil
	}
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("Cluster.Client is required"))
	}
	if o.StatusReporter != nil {
		errs = append(errs, errors.New("Cluster and StatusReporter exclude each other: the cluster's status manager reports statuses"))
	}
	for i, s := range o.Sources {
		if s.Name == podmanager.APISource {
			errs = append(errs, fmt.Errorf("Sources[%d]: Cluster adds the %q source itself", i, podmanager.APISource))
		}
	}
	return errs
}

// apiSource is the pod source of Options.Cluster: the pods bound to the
// node, rejections reported like the other sources' (a.sourceError).
func (a *Agent) apiSource() (namedRunner, error) {
	c := a.opts.Cluster
	src, err := source.NewAPI(a.config.Sink(podmanager.APISource), source.APIOptions{
		Client: c.Client, NodeName: a.opts.NodeName, Logger: a.opts.Logger.WithName("api"), OnError: a.sourceError,
	})
	return namedRunner{podmanager.APISource, src}, err
}

// newCluster builds the parts of Options.Cluster; a.workers and a.pods
// exist already.
func (a *Agent) newCluster() error {
	c, opts := a.opts.Cluster, a.opts
	if a.opts.MirrorClient == nil {
		m, err := kubemirror.New(c.Client, kubemirror.Options{NodeName: opts.NodeName, Logger: opts.Logger.WithName("mirror")})
		if err != nil {
			return err
		}
		a.opts.MirrorClient = m
	}
	so := c.Status
	if so.Client == nil {
		so.Client = c.Client
	}
	if so.PodStates == nil {
		so.PodStates = a.workers
	}
	if so.Pods == nil {
		so.Pods = a.pods
	}
	if so.Logger.GetSink() == nil {
		so.Logger = opts.Logger.WithName("status")
	}
	if so.Clock == nil {
		so.Clock = opts.Clock
	}
	if so.Registerer == nil {
		so.Registerer, so.MetricsNamespace = opts.Registerer, opts.MetricsNamespace
	}
	mgr, err := status.New(so)
	if err != nil {
		return fmt.Errorf("status manager: %w", err)
	}
	a.cluster.status, a.report = mgr, mgr

	if !c.SkipNode {
		no := c.Node
		if no.Client == nil {
			no.Client = c.Client
		}
		if no.NodeName == "" {
			no.NodeName = opts.NodeName
		}
		if no.Runtime == nil {
			no.Runtime = opts.Runtime
		}
		if no.Labels == nil {
			no.Labels = c.Labels
		}
		if no.Images == nil {
			no.Images = a.nodeImages // agent/imagegc's list (agent/imagegc.go)
		}
		if no.Taints == nil {
			no.Taints = c.Taints
		}
		if no.Logger.GetSink() == nil {
			no.Logger = opts.Logger.WithName("node")
		}
		if no.Clock == nil {
			no.Clock = opts.Clock
		}
		if no.Registerer == nil {
			no.Registerer = opts.Registerer
		}
		no.Provider = a.shutdownNodeProvider(no.Provider) // nodeshutdown.go
		if a.server != nil && no.DaemonEndpointPort == 0 {
			// The port the node server really serves on.
			no.DaemonEndpointPort = int32(a.server.Port())
		}
		if no.Pressure == nil && opts.Eviction != nil {
			no.Pressure = evictionPressure{a}
		}
		if a.cluster.node, err = node.New(no); err != nil {
			return err
		}
		if a.opts.NodeIPs == nil {
			a.opts.NodeIPs = a.cluster.node.NodeIPs
		}
	}

	if a.opts.Recorder == nil {
		ec := c.EventClient
		if ec == nil {
			ec = c.Client
		}
		eo := c.Events
		if eo.Client == nil {
			eo.Client = ec
		}
		if eo.NodeName == "" {
			eo.NodeName = opts.NodeName
		}
		if eo.Clock == nil {
			eo.Clock = opts.Clock
		}
		if eo.Logger.GetSink() == nil {
			eo.Logger = opts.Logger.WithName("events")
		}
		if eo.Registerer == nil {
			eo.Registerer = opts.Registerer
		}
		rec, err := events.New(eo)
		if err != nil {
			return err
		}
		a.cluster.events, a.opts.Recorder = rec, rec
	}
	return a.newContainerOptions()
}

// newContainerOptions gives the runtime, when it takes one, the provider
// of cluster-made container options: the volume manager's volumes,
// envvars' environment and the image pull credentials of the pods'
// imagePullSecrets.
func (a *Agent) newContainerOptions() error {
	c, opts := a.opts.Cluster, a.opts
	setter, ok := opts.Runtime.(interface {
		SetContainerOptionsProvider(runtime.ContainerOptionsProvider)
	})
	if c.SkipContainerOptions || !ok {
		return nil
	}
	vo := c.Volumes
	if vo.Client == nil {
		vo.Client = c.Client
	}
	if vo.Root == "" {
		vo.Root = filepath.Join(os.TempDir(), "podlife-pod-volumes")
	}
	if vo.Logger.GetSink() == nil {
		vo.Logger = opts.Logger
	}
	if vo.Clock == nil {
		vo.Clock = opts.Clock
	}
	// A limit a container does not set reads, in a resourceFieldRef (an
	// env var or a downwardAPI file), as the node's allocatable: the
	// node controller's figures, the same for both.
	var allocatable func() v1.ResourceList
	if a.cluster.node != nil {
		allocatable = a.cluster.node.Allocatable
	}
	if vo.Allocatable == nil {
		vo.Allocatable = allocatable
	}
	mgr, err := volume.New(vo)
	if err != nil {
		return err
	}
	// Services from one watch of them all, as the kubelet's lister: no
	// request per container start. The caller's, when given; else the
	// agent's own.
	var reader envvars.Reader
	if c.Services != nil {
		reader = sharedServices{envvars.ClientReader{Client: c.Client}, c.Services}
	} else {
		services, err := envvars.NewWatchingReader(c.Client)
		if err != nil {
			return err
		}
		reader, a.cluster.services = services, services
	}
	env := envvars.New(envvars.Options{
		Reader:      reader,
		HostIPs:     opts.NodeIPs,
		Allocatable: vo.Allocatable,
		Recorder:    opts.Recorder,
		Logger:      opts.Logger.WithName("envvars"),
	})
	creds := credentials.New(credentials.Options{
		Secrets:  credentials.ClientSecrets{Client: c.Client},
		Recorder: opts.Recorder,
		Logger:   opts.Logger.WithName("credentials"),
	})
	a.cluster.volumes = mgr
	setter.SetContainerOptionsProvider(volume.Provider{Volumes: mgr, Env: env, Credentials: creds})
	return nil
}

// clusterRunners are the parts of Options.Cluster that Run runs.
func (a *Agent) clusterRunners() []namedRunner {
	var rs []namedRunner
	if a.cluster.node != nil {
		rs = append(rs, namedRunner{"node", a.cluster.node})
	}
	if a.cluster.status != nil {
		rs = append(rs, namedRunner{"status manager", a.cluster.status})
	}
	if a.cluster.events != nil {
		rs = append(rs, namedRunner{"events", a.cluster.events})
	}
	if a.cluster.volumes != nil {
		rs = append(rs, namedRunner{"volume manager", a.cluster.volumes})
	}
	if a.cluster.services != nil {
		rs = append(rs, namedRunner{"services watch", a.cluster.services})
	}
	return rs
}

// forgetStatus tells the status manager that the agent forgot a pod.
func (a *Agent) forgetStatus(uid types.UID) {
	a.mu.Lock()
	delete(a.pending, uid)
	a.mu.Unlock()
	if a.cluster.status != nil {
		a.cluster.status.Forget(uid)
	}
	if a.prober != nil {
		a.prober.RemovePod(uid)
	}
}

// Node returns the cluster's node controller (Options.Cluster), or nil.
func (a *Agent) Node() *node.Controller { return a.cluster.node }

// StatusManager returns the cluster's status manager (Options.Cluster), or
// nil.
func (a *Agent) StatusManager() *status.Manager { return a.cluster.status }

// EventRecorder returns the events recorder the agent made for
// Options.Cluster (give it to the runtime, cri.Options.Recorder), or nil
// when Options.Recorder was given or there is no cluster.
func (a *Agent) EventRecorder() *events.Recorder { return a.cluster.events }
