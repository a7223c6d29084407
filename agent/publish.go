package agent

import (
	"context"
	"hash/fnv"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/agent/podstatus"
	"github.com/podlife/podlife/runtime/prober"
)

// Statuses are published by a pod's worker after each of its syncs, and by
// a readiness probe result while that worker is busy stopping the pod
// (publishReadiness). Both publish under the pod's publishing lock, and
// the second starts from the newest published status: a readiness change
// never replaces a newer status with an older one, and never follows the
// final one.

const publishStripes = 64

// publishLock returns the publishing lock of the pod.
func (a *Agent) publishLock(uid types.UID) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	return &a.publishing[h.Sum32()%publishStripes]
}

// publishFinished publishes the final status of pod (SyncTerminatedPod):
// to the agent's own reporter, then to Options' one.
func (a *Agent) publishFinished(ctx context.Context, pod, mirror *v1.Pod, st v1.PodStatus) error {
	mu := a.publishLock(pod.UID)
	mu.Lock()
	defer mu.Unlock()
	_ = a.status.PodFinished(ctx, pod, mirror, st)
	if a.report == nil {
		return nil
	}
	if err := a.report.PodFinished(ctx, pod, mirror, st); err != nil {
		return err
	}
	a.noteFinished(pod)
	return nil
}

// reportFinished publishes again the final status of a finished pod to
// Options' reporter (the deletion of a pod that had finished).
func (a *Agent) reportFinished(ctx context.Context, pod, mirror *v1.Pod, st v1.PodStatus) error {
	mu := a.publishLock(pod.UID)
	mu.Lock()
	defer mu.Unlock()
	return a.report.PodFinished(ctx, pod, mirror, st)
}

// publishReadiness publishes, for a pod whose termination was asked for, the
// readiness a probe just found, as the kubelet's status manager
// (SetContainerReadiness): the worker is busy giving the containers their
// grace period and publishes nothing until they stopped, yet the pod must
// turn not ready as soon as its probe fails, so that it leaves its
// Services' endpoints. Nothing is published once the pod finished or its
// published phase is terminal.
func (a *Agent) publishReadiness(ctx context.Context, pod *v1.Pod, u prober.Update) {
	mu := a.publishLock(pod.UID)
	mu.Lock()
	defer mu.Unlock()
	if a.status.Finished(pod.UID) {
		return
	}
	st, ok := a.status.Status(pod.UID)
	if !ok {
		return
	}
	next, changed := podstatus.WithContainerReadiness(pod, st, u.ContainerName, u.ContainerID, u.Result == prober.Success, a.clock.Now())
	if !changed {
		return
	}
	a.log.V(2).Info("readiness changed while the pod terminates", "pod", podRef(pod), "podUID", pod.UID, "container", u.ContainerName, "ready", u.Result == prober.Success)
	_, mirror, _ := a.pods.GetPodAndMirrorPod(pod)
	a.publishStatusLocked(ctx, pod, mirror, next)
}
