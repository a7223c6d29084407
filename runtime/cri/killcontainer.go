package cri

import (
	"context"

	"github.com/podlife/podlife/runtime"
)

// KillContainer stops one container of a pod within gracePeriod seconds
// (at least MinimumGracePeriod): what the kubelet does to a container whose
// liveness or startup probe failed. It does not remove it; the next SyncPod
// restarts it as the pod's restart policy says, with the crash-loop
// back-off. A container that vanished counts as stopped.
func (r *Runtime) KillContainer(ctx context.Context, id runtime.ContainerID, gracePeriod int64) error {
	return r.stopContainer(ctx, id.ID, gracePeriod)
}
