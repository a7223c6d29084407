package cri

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ReopenContainerLog asks the runtime to write the container's log to a
// new file at its log path (CRI ReopenContainerLog), after a log rotation
// renamed the old one away (agent/logrotate). A runtime refuses it for a
// container that is not running (containerd: Unknown, "container is not
// running").
func (r *Runtime) ReopenContainerLog(ctx context.Context, containerID string) error {
	cctx, cancel := r.callCtx(ctx, 0)
	defer cancel()
	if _, err := r.rs.ReopenContainerLog(cctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: containerID}); err != nil {
		return fmt.Errorf("reopen log of container %q: %w", containerID, fromGRPC(err))
	}
	return nil
}
