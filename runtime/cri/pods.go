package cri

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

// GetPods implements runtime.Runtime. Objects are grouped by their pod UID
// label (a sandbox without labels by its metadata, a container without
// labels by its sandbox).
func (r *Runtime) GetPods(ctx context.Context, all bool) ([]*runtime.Pod, error) {
	sbFilter := &runtimeapi.PodSandboxFilter{}
	cFilter := &runtimeapi.ContainerFilter{}
	if !all {
		sbFilter.State = &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}
		cFilter.State = &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}
	}
	return r.listPods(ctx, sbFilter, cFilter)
}

func (r *Runtime) listPods(ctx context.Context, sbFilter *runtimeapi.PodSandboxFilter, cFilter *runtimeapi.ContainerFilter) ([]*runtime.Pod, error) {
	sandboxes, err := r.listSandboxes(ctx, sbFilter, listOption())
	if err != nil {
		return nil, err
	}
	containers, err := r.listContainers(ctx, cFilter, listOption())
	if err != nil {
		return nil, err
	}
	if cFilter.GetState() == nil && cFilter.GetLabelSelector() == nil && cFilter.GetId() == "" && cFilter.GetPodSandboxId() == "" && r.termMsgs.due() {
		present := make(map[string]bool, len(containers))
		for _, c := range containers {
			present[c.GetId()] = true
		}
		r.termMsgs.prune(present)
	}
	rtName := r.name(ctx)
	ts := r.opts.Clock.Now()
	pods := map[types.UID]*runtime.Pod{}
	sandboxPod := map[string]types.UID{}
	get := func(id podIdentity) *runtime.Pod {
		p := pods[id.UID]
		if p == nil {
			p = &runtime.Pod{ID: id.UID, Name: id.Name, Namespace: id.Namespace, Timestamp: ts}
			pods[id.UID] = p
		}
		if p.Name == "" {
			p.Name, p.Namespace = id.Name, id.Namespace
		}
		return p
	}
	for _, sb := range sandboxes {
		id := identityFromLabels(sb.GetLabels())
		if id.UID == "" {
			md := sb.GetMetadata()
			id = podIdentity{UID: types.UID(md.GetUid()), Name: md.GetName(), Namespace: md.GetNamespace()}
		}
		if id.UID == "" {
			continue
		}
		sandboxPod[sb.GetId()] = id.UID
		p := get(id)
		c := toSandboxContainer(rtName, sb)
		p.Sandboxes = append(p.Sandboxes, c)
		if p.CreatedAt.IsZero() || c.CreatedAt.Before(p.CreatedAt) {
			p.CreatedAt = c.CreatedAt
		}
	}
	for _, c := range containers {
		id := identityFromLabels(c.GetLabels())
		if id.UID == "" {
			uid, ok := sandboxPod[c.GetPodSandboxId()]
			if !ok {
				continue
			}
			id = podIdentity{UID: uid}
		}
		p := get(id)
		p.Containers = append(p.Containers, toContainer(rtName, c))
	}
	out := make([]*runtime.Pod, 0, len(pods))
	for _, p := range pods {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *runtime.Pod) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

func (r *Runtime) listSandboxes(ctx context.Context, f *runtimeapi.PodSandboxFilter, opts ...grpc.CallOption) ([]*runtimeapi.PodSandbox, error) {
	cctx, cancel := r.callCtx(ctx, 0)
	defer cancel()
	resp, err := r.rs.ListPodSandbox(cctx, &runtimeapi.ListPodSandboxRequest{Filter: f}, opts...)
	if err != nil {
		return nil, fmt.Errorf("list pod sandboxes: %w", fromGRPC(err))
	}
	return resp.GetItems(), nil
}

func (r *Runtime) listContainers(ctx context.Context, f *runtimeapi.ContainerFilter, opts ...grpc.CallOption) ([]*runtimeapi.Container, error) {
	cctx, cancel := r.callCtx(ctx, 0)
	defer cancel()
	resp, err := r.rs.ListContainers(cctx, &runtimeapi.ListContainersRequest{Filter: f}, opts...)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", fromGRPC(err))
	}
	return resp.GetContainers(), nil
}

// GetPodStatus implements runtime.Runtime. Sandbox and container statuses
// are sorted newest first. Objects that vanish while being read are skipped.
func (r *Runtime) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*runtime.PodStatus, error) {
	full := namespace + "/" + name
	ts := r.opts.Clock.Now()
	sel := map[string]string{LabelPodUID: string(uid)}
	// The lists give IDs (and a container's name) only: the partial
	// decoder skips the labels and annotations.
	sandboxes, err := r.listSandboxes(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel}, listOption())
	if err != nil {
		return nil, fmt.Errorf("status of pod %s (%s): %w", full, uid, err)
	}
	status := &runtime.PodStatus{ID: uid, Name: name, Namespace: namespace, TimeStamp: ts}
	for _, sb := range sandboxes {
		st, err := r.sandboxStatus(ctx, sb.GetId())
		if ignoreNotFound(err) != nil {
			return nil, fmt.Errorf("status of pod %s (%s): %w", full, uid, err)
		}
		if st != nil {
			status.SandboxStatuses = append(status.SandboxStatuses, toSandboxStatus(st))
		}
	}
	slices.SortFunc(status.SandboxStatuses, func(a, b *runtime.SandboxStatus) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.Attempt, a.Attempt))
	})
	for _, sb := range status.SandboxStatuses {
		if sb.State == runtime.SandboxStateReady {
			status.IPs = sb.IPs
			break
		}
	}
	containers, err := r.listContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel}, listOption())
	if err != nil {
		return nil, fmt.Errorf("status of pod %s (%s): %w", full, uid, err)
	}
	rtName := r.name(ctx)
	for _, c := range containers {
		cctx, cancel := r.callCtx(ctx, 0)
		resp, err := r.rs.ContainerStatus(cctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.GetId()})
		cancel()
		if err = fromGRPC(err); ignoreNotFound(err) != nil {
			return nil, fmt.Errorf("status of container %q of pod %s (%s): %w", c.GetMetadata().GetName(), full, uid, err)
		}
		if err == nil && resp.GetStatus() != nil {
			cs := toContainerStatus(rtName, resp.GetStatus())
			r.terminationMessage(cs, resp.GetStatus())
			status.ContainerStatuses = append(status.ContainerStatuses, cs)
		}
	}
	slices.SortFunc(status.ContainerStatuses, func(a, b *runtime.ContainerStatus) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.RestartCount, a.RestartCount))
	})
	return status, nil
}

func (r *Runtime) sandboxStatus(ctx context.Context, id string) (*runtimeapi.PodSandboxStatus, error) {
	cctx, cancel := r.callCtx(ctx, 0)
	defer cancel()
	resp, err := r.rs.PodSandboxStatus(cctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		return nil, fmt.Errorf("sandbox %q: %w", id, fromGRPC(err))
	}
	return resp.GetStatus(), nil
}
