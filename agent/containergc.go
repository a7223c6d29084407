package agent

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/agent/gc"
	"github.com/podlife/podlife/runtime"
)

// newContainerGC builds the container garbage collection (agent/gc) of
// the Options, unless ContainerGCPeriod is negative or the runtime cannot
// remove containers and sandboxes one by one. It takes the relister's
// last listing of the runtime (no listing of its own),
// asks the pod workers what may go, waits for the sources and a first
// housekeeping pass before it touches what the workers do not know, and
// sweeps the runtime's VolumeRoot and the volume manager's Root.
func (a *Agent) newContainerGC() error {
	o := a.opts
	if o.ContainerGCPeriod < 0 {
		return nil
	}
	rt, ok := o.Runtime.(gc.Runtime)
	if !ok {
		return nil
	}
	var roots []string
	if r, ok := o.Runtime.(interface{ VolumeRoot() string }); ok {
		roots = append(roots, r.VolumeRoot())
	}
	if a.cluster.volumes != nil {
		roots = append(roots, a.cluster.volumes.Root())
	}
	m, err := gc.New(gc.Options{
		Runtime: relistedRuntime{Runtime: rt, relist: a.relist},
		Pods:    a.workers,
		// The workers know the desired pods from the first housekeeping
		// pass on (SyncKnownPods).
		SourcesReady:       func() bool { return a.SourcesReady() && a.Housekeepings() > 0 },
		Policy:             o.ContainerGCPolicy,
		KeepNoDeadInstance: o.ContainerGCKeepNoDeadInstance,
		Period:             o.ContainerGCPeriod,
		PodFolderRoots:     roots,
		Clock:              o.Clock,
		Logger:             o.Logger.WithName("gc"),
		OnListFailure:      a.containerGCFailed,
		Registerer:         o.Registerer,
		MetricsNamespace:   o.MetricsNamespace,
	})
	if err != nil {
		return err
	}
	a.gc = m
	return nil
}

// containerGCFailed records the kubelet's ContainerGCFailed event on the
// Node, once per row of failed listings.
func (a *Agent) containerGCFailed(err error) {
	if a.opts.Recorder == nil {
		return
	}
	node := &v1.ObjectReference{Kind: "Node", Name: a.opts.NodeName, UID: types.UID(a.opts.NodeName)}
	a.opts.Recorder.Eventf(node, v1.EventTypeWarning, "ContainerGCFailed", "%s", err.Error())
}

// relistedRuntime lists every pod through the relister: its last
// listing (or a relist, before the first).
type relistedRuntime struct {
	gc.Runtime
	relist *runtime.Relister
}

func (r relistedRuntime) GetPods(ctx context.Context, all bool) ([]*runtime.Pod, error) {
	if !all {
		return r.Runtime.GetPods(ctx, false)
	}
	// The last listing, however old: a pass never waits for a relist
	// (seconds at 100,000 pods). A stale listing is safe: what was dead
	// stays dead, a sandbox that was not ready never gets a container
	// again, each pod's fate is asked of the workers now, and an object
	// removed meanwhile counts as removed.
	pods, _, err := r.relist.PodsAfter(ctx, 0)
	return pods, err
}

// ContainerGC returns the agent's container garbage collection, or nil
// when it has none (Options.ContainerGCPeriod negative, or a runtime that
// cannot remove containers and sandboxes one by one). Run runs it; its
// GarbageCollect makes a pass at once.
func (a *Agent) ContainerGC() *gc.Manager { return a.gc }
