package fakecri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Stats: fake containers use no real CPU or memory, so the figures are
// made up, deterministic and plausible: a running container has used 10 ms
// of CPU per second since it started (1% of a core) and has a working set
// of 1 MiB; a pod's figures are the sum of its running containers'.
const (
	fakeCPUPerSecond = 10_000_000 // core-nanoseconds per second of life
	fakeWorkingSet   = 1 << 20
)

func (s *Server) containerStatsLocked(c *container, now int64) *runtimeapi.ContainerStats {
	var cpu uint64
	if c.startedAt > 0 && now > c.startedAt {
		cpu = uint64(now-c.startedAt) / 1e9 * fakeCPUPerSecond
		cpu += uint64(now-c.startedAt) % 1e9 * fakeCPUPerSecond / 1e9
	}
	return &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{Id: c.id, Metadata: c.config.GetMetadata(),
			Labels: c.config.GetLabels(), Annotations: c.config.GetAnnotations()},
		Cpu: &runtimeapi.CpuUsage{Timestamp: now, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: cpu},
			UsageNanoCores: &runtimeapi.UInt64Value{Value: fakeCPUPerSecond}},
		Memory: &runtimeapi.MemoryUsage{Timestamp: now, WorkingSetBytes: &runtimeapi.UInt64Value{Value: fakeWorkingSet},
			UsageBytes: &runtimeapi.UInt64Value{Value: fakeWorkingSet}},
	}
}

// ContainerStats answers the figures of one running container.
func (r *runtimeService) ContainerStats(_ context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[req.GetContainerId()]
	if !ok {
		return nil, notFound("container", req.GetContainerId())
	}
	return &runtimeapi.ContainerStatsResponse{Stats: s.containerStatsLocked(c, s.now())}, nil
}

// ListContainerStats answers the figures of the running containers that
// match the filter.
func (r *runtimeService) ListContainerStats(_ context.Context, req *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	f, now := req.GetFilter(), s.now()
	var out []*runtimeapi.ContainerStats
	for _, c := range s.containers {
		if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING ||
			f.GetId() != "" && f.GetId() != c.id ||
			f.GetPodSandboxId() != "" && f.GetPodSandboxId() != c.sandboxID ||
			!matchLabels(f.GetLabelSelector(), c.config.GetLabels()) {
			continue
		}
		out = append(out, s.containerStatsLocked(c, now))
	}
	return &runtimeapi.ListContainerStatsResponse{Stats: out}, nil
}

// ListPodSandboxStats answers the figures of the ready sandboxes that
// match the filter, with their containers'.
func (r *runtimeService) ListPodSandboxStats(_ context.Context, req *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	f, now := req.GetFilter(), s.now()
	// The running containers by sandbox, in one walk (a walk per sandbox
	// made the call quadratic: minutes at 100,000 pods, under the lock
	// every other call needs).
	running := map[string][]*container{}
	for _, c := range s.containers {
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING && (f.GetId() == "" || f.GetId() == c.sandboxID) {
			running[c.sandboxID] = append(running[c.sandboxID], c)
		}
	}
	var out []*runtimeapi.PodSandboxStats
	for _, sb := range s.sandboxes {
		if sb.state != runtimeapi.PodSandboxState_SANDBOX_READY ||
			f.GetId() != "" && f.GetId() != sb.id ||
			!matchLabels(f.GetLabelSelector(), sb.config.GetLabels()) {
			continue
		}
		var cpu, ws uint64
		var cs []*runtimeapi.ContainerStats
		for _, c := range running[sb.id] {
			st := s.containerStatsLocked(c, now)
			cpu += st.GetCpu().GetUsageCoreNanoSeconds().GetValue()
			ws += st.GetMemory().GetWorkingSetBytes().GetValue()
			cs = append(cs, st)
		}
		out = append(out, &runtimeapi.PodSandboxStats{
			Attributes: &runtimeapi.PodSandboxAttributes{Id: sb.id, Metadata: sb.config.GetMetadata(),
				Labels: sb.config.GetLabels(), Annotations: sb.config.GetAnnotations()},
			Linux: &runtimeapi.LinuxPodSandboxStats{
				Cpu:        &runtimeapi.CpuUsage{Timestamp: now, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: cpu}},
				Memory:     &runtimeapi.MemoryUsage{Timestamp: now, WorkingSetBytes: &runtimeapi.UInt64Value{Value: ws}},
				Containers: cs,
			},
		})
	}
	return &runtimeapi.ListPodSandboxStatsResponse{Stats: out}, nil
}
