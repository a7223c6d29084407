package fakecri

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// UpdateContainerResources records the new resources of a created or running
// container; ContainerStatus reports them. An exited container is refused
// (FailedPrecondition), as containerd refuses to update a stopped one; an
// unknown one is NotFound.
func (r *runtimeService) UpdateContainerResources(_ context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[req.GetContainerId()]
	if !ok {
		return nil, notFound("container", req.GetContainerId())
	}
	if c.state == runtimeapi.ContainerState_CONTAINER_EXITED {
		return nil, status.Errorf(codes.FailedPrecondition, "container %q is stopped: its resources cannot be updated", c.id)
	}
	res := &runtimeapi.ContainerResources{}
	if lr := req.GetLinux(); lr != nil {
		res.Linux = proto.Clone(lr).(*runtimeapi.LinuxContainerResources)
	}
	c.resources = res
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

func cloneResources(res *runtimeapi.ContainerResources) *runtimeapi.ContainerResources {
	if res == nil {
		return nil
	}
	return proto.Clone(res).(*runtimeapi.ContainerResources)
}

func cloneMounts(ms []*runtimeapi.Mount) []*runtimeapi.Mount {
	var out []*runtimeapi.Mount
	for _, m := range ms {
		out = append(out, proto.Clone(m).(*runtimeapi.Mount))
	}
	return out
}
