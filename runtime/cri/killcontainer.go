package cri

import (
	"context"

	"github.com/podlife/podlife/runtime"
)

// KillContainer stops one container of a pod within gracePeriod seconds
// (at least MinimumGracePeriod): what the kubelet does to a container whose
// liveness or startup probe failed. Its preStop handler, recorded when it
// was created, runs first and takes its time out of the grace period. It does not remove it; the next SyncPod
// restarts it as the pod's restart policy says, with the crash-loop
// back-off. A container that vanished counts as stopped.
func (r *Runtime) KillContainer(ctx context.Context, id runtime.ContainerID, gracePeriod int64) error {
	t, h, ok := r.containerTarget(ctx, id.ID)
	if !ok {
		return r.stopContainer(ctx, id.ID, gracePeriod)
	}
	return r.killOne(ctx, t, h, gracePeriod)
}
