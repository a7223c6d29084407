package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/agent/node"
	"github.com/podlife/podlife/agent/shutdown"
	"github.com/podlife/podlife/podworker"
)

// ErrNoGracefulShutdown is ShutdownNode's error when the Options configure
// no graceful node shutdown.
var ErrNoGracefulShutdown = errors.New("agent: graceful node shutdown not configured (Options.ShutdownGracePeriod or ShutdownGracePeriodByPodPriority)")

// statusFlushPoll is how often ShutdownNode checks whether the stopped
// pods' statuses have been written.
const statusFlushPoll = 50 * time.Millisecond

// shutdownConfigured reports whether the Options ask for a graceful node
// shutdown.
func (o Options) shutdownConfigured() bool {
	// Any of them: a part given alone is refused by shutdown.New, not
	// ignored.
	return o.ShutdownGracePeriod != 0 || o.ShutdownGracePeriodCriticalPods != 0 || len(o.ShutdownGracePeriodByPodPriority) > 0
}

// newNodeShutdown builds the graceful node shutdown (agent/shutdown) of
// the Options, when they configure one, and adds its admission check in
// front of Options.AdmitHandlers.
func (a *Agent) newNodeShutdown() error {
	o := a.opts
	if !o.shutdownConfigured() {
		return nil
	}
	so := shutdown.Options{
		ShutdownGracePeriod:              o.ShutdownGracePeriod,
		ShutdownGracePeriodCriticalPods:  o.ShutdownGracePeriodCriticalPods,
		ShutdownGracePeriodByPodPriority: o.ShutdownGracePeriodByPodPriority,
		ActivePods:                       a.shutdownActivePods,
		KillPod:                          a.shutdownKillPod,
		StateFile:                        o.ShutdownStateFile,
		Recorder:                         o.Recorder,
		NodeRef:                          &v1.ObjectReference{Kind: "Node", Name: o.NodeName, UID: types.UID(o.NodeName)},
		Logger:                           o.Logger.WithName("nodeshutdown"),
		Clock:                            o.Clock,
		Registerer:                       o.Registerer,
		MetricsNamespace:                 o.MetricsNamespace,
	}
	if a.cluster.node != nil {
		so.SyncNode = a.cluster.node.SyncStatus
	}
	m, err := shutdown.New(so)
	if err != nil {
		return err
	}
	a.shutdown = m
	a.opts.AdmitHandlers = append([]AdmitHandler{AdmitHandlerFunc(func(attrs *AdmitAttributes) AdmitResult {
		ok, reason, message := m.AdmitPod(attrs.Pod)
		return AdmitResult{Admit: ok, Reason: reason, Message: message}
	})}, a.opts.AdmitHandlers...)
	return nil
}

// shutdownNodeProvider returns the Node's provider: the Options' (p), then
// the shutdown's Ready condition.
func (a *Agent) shutdownNodeProvider(p node.Provider) node.Provider {
	if !a.opts.shutdownConfigured() {
		return p
	}
	return node.ProviderFunc(func(ctx context.Context, st *v1.NodeStatus) error {
		if p != nil {
			if err := p.ConfigureNode(ctx, st); err != nil {
				return err
			}
		}
		if a.shutdown != nil {
			return a.shutdown.ConfigureNode(ctx, st)
		}
		return nil
	})
}

// shutdownActivePods are the pods a shutdown stops: those admitted and
// active (the kubelet's GetActivePods). It remembers them, for
// ShutdownNode to wait for their statuses.
func (a *Agent) shutdownActivePods() []*v1.Pod {
	var active []*v1.Pod
	for _, p := range a.pods.GetPods() {
		if !a.isPodInactive(p) {
			active = append(active, p)
		}
	}
	a.mu.Lock()
	a.shutdownPods = active
	a.mu.Unlock()
	return active
}

// shutdownKillPod stops a pod through its pod worker, as the kubelet's
// killPodNow: a kill with the grace period and the status edit, waited
// for until the pod has terminated or ctx ends (the pod's group ran out of
// time: the worker goes on stopping it).
func (a *Agent) shutdownKillPod(ctx context.Context, pod *v1.Pod, gracePeriod int64, statusFn func(*v1.PodStatus)) error {
	done := make(chan struct{})
	_, mirror, _ := a.pods.GetPodAndMirrorPod(pod)
	a.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, Pod: pod, MirrorPod: mirror,
		KillPodOptions: &podworker.KillPodOptions{
			CompletedCh:                              done,
			PodStatusFunc:                            statusFn,
			PodTerminationGracePeriodSecondsOverride: &gracePeriod,
		}})
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		a.event(pod, v1.EventTypeWarning, "ExceededGracePeriod", "Container runtime did not kill the pod within specified grace period.")
		return fmt.Errorf("pod %s not stopped: %w", podRef(pod), ctx.Err())
	}
}

// ShutdownNode shuts the node down gracefully (package agent/shutdown,
// configured by Options.ShutdownGracePeriod,
// ShutdownGracePeriodCriticalPods or ShutdownGracePeriodByPodPriority):
// new pods are refused (NodeShutdown), the Node's Ready condition turns
// False ("node is shutting down") and is written at once, the active pods
// are stopped in order of priority within their groups' grace periods,
// their statuses Failed with reason Terminated. It then waits, for what is
// left of the shutdown's budget, until the stopped pods' final statuses
// are published and, with Options.Cluster, written to the API server. The
// caller then ends Run (the example agent exits). Run must be running. It
// returns ErrNoGracefulShutdown when nothing is configured; a second call
// waits for the first.
func (a *Agent) ShutdownNode(ctx context.Context) (shutdown.Result, error) {
	if a.shutdown == nil {
		return shutdown.Result{}, ErrNoGracefulShutdown
	}
	res, err := a.shutdown.Shutdown(ctx)
	if err != nil {
		return res, err
	}
	deadline := res.Start.Add(a.shutdown.Budget())
	a.mu.Lock()
	pods := a.shutdownPods
	a.mu.Unlock()
	if !a.waitShutdownStatuses(ctx, pods, deadline) {
		a.log.Info("node shutdown: not every pod's final status was written within the shutdown's budget", "pods", len(pods))
	}
	return res, ctx.Err()
}

// waitShutdownStatuses waits until every pod of pods that stopped has its
// final status published and the status manager has nothing left to
// write, or until deadline (on the agent's clock) or ctx's end. It
// reports whether it saw them written.
func (a *Agent) waitShutdownStatuses(ctx context.Context, pods []*v1.Pod, deadline time.Time) bool {
	t := a.clock.NewTicker(statusFlushPoll)
	defer t.Stop()
	for {
		if a.shutdownStatusesWritten(pods) {
			return true
		}
		if !a.clock.Now().Before(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C():
		}
	}
}

// shutdownStatusesWritten reports whether the stopped pods have their
// final statuses published (a pod still terminating, its group's time
// over, is not waited for) and the status manager has written them.
func (a *Agent) shutdownStatusesWritten(pods []*v1.Pod) bool {
	for _, p := range pods {
		if a.workers.IsPodKnownTerminated(p.UID) && !a.finishedPublished(p.UID) {
			return false
		}
	}
	return a.cluster.status == nil || a.cluster.status.Pending() == 0
}

// finishedPublished reports whether the pod's final status was published
// to every reporter: publishFinished hands it to the in-memory one first,
// under the pod's publishing lock.
func (a *Agent) finishedPublished(uid types.UID) bool {
	mu := a.publishLock(uid)
	mu.Lock()
	defer mu.Unlock()
	return a.status.Finished(uid)
}

// NodeShutdown returns the agent's graceful node shutdown, or nil when
// the Options configure none.
func (a *Agent) NodeShutdown() *shutdown.Manager { return a.shutdown }
