package cri

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/podlife/podlife/runtime"
)

// ListPodStats returns the CPU and memory figures of every ready pod and
// its running containers, as the kubelet's CRI stats provider: the
// containers' from ListContainerStats, the pods' from ListPodSandboxStats
// (or, when the runtime does not serve it, the sum of their containers'),
// start times from the sandboxes' and containers' creation.
func (r *Runtime) ListPodStats(ctx context.Context) ([]statsapi.PodStats, error) {
	sbs, err := r.listSandboxes(ctx, &runtimeapi.PodSandboxFilter{
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}})
	if err != nil {
		return nil, err
	}
	cs, err := r.listContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
	if err != nil {
		return nil, err
	}
	cctx, cancel := r.callCtx(ctx, 0)
	cresp, err := r.rs.ListContainerStats(cctx, &runtimeapi.ListContainerStatsRequest{})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("list container stats: %w", fromGRPC(err))
	}
	cstats := map[string]*runtimeapi.ContainerStats{}
	for _, s := range cresp.GetStats() {
		cstats[s.GetAttributes().GetId()] = s
	}
	cctx, cancel = r.callCtx(ctx, 0)
	sresp, err := r.rs.ListPodSandboxStats(cctx, &runtimeapi.ListPodSandboxStatsRequest{})
	cancel()
	sbStats := map[string]*runtimeapi.PodSandboxStats{}
	switch err = fromGRPC(err); {
	case err == nil:
		for _, s := range sresp.GetStats() {
			sbStats[s.GetAttributes().GetId()] = s
		}
	case errors.Is(err, runtime.ErrUnimplemented):
	default:
		return nil, fmt.Errorf("list pod sandbox stats: %w", err)
	}

	bySandbox := map[string][]*runtimeapi.Container{}
	for _, c := range cs {
		bySandbox[c.GetPodSandboxId()] = append(bySandbox[c.GetPodSandboxId()], c)
	}
	out := make([]statsapi.PodStats, 0, len(sbs))
	for _, sb := range sbs {
		md := sb.GetMetadata()
		ps := statsapi.PodStats{
			PodRef:    statsapi.PodReference{Name: md.GetName(), Namespace: md.GetNamespace(), UID: md.GetUid()},
			StartTime: metav1.NewTime(time.Unix(0, sb.GetCreatedAt())),
		}
		var sumCPU, sumWS, sumUsage uint64
		var sumTime int64
		for _, c := range bySandbox[sb.GetId()] {
			st := statsapi.ContainerStats{Name: c.GetMetadata().GetName(), StartTime: metav1.NewTime(time.Unix(0, c.GetCreatedAt()))}
			if s := cstats[c.GetId()]; s != nil {
				st.CPU = cpuStats(s.GetCpu())
				st.Memory = memoryStats(s.GetMemory())
				sumCPU += s.GetCpu().GetUsageCoreNanoSeconds().GetValue()
				sumWS += s.GetMemory().GetWorkingSetBytes().GetValue()
				sumUsage += s.GetMemory().GetUsageBytes().GetValue()
				sumTime = max(sumTime, s.GetCpu().GetTimestamp(), s.GetMemory().GetTimestamp())
			}
			ps.Containers = append(ps.Containers, st)
		}
		if s := sbStats[sb.GetId()]; s != nil && s.GetLinux() != nil {
			ps.CPU = cpuStats(s.GetLinux().GetCpu())
			ps.Memory = memoryStats(s.GetLinux().GetMemory())
		}
		if ps.CPU == nil && sumTime > 0 {
			t := metav1.NewTime(time.Unix(0, sumTime))
			ps.CPU = &statsapi.CPUStats{Time: t, UsageCoreNanoSeconds: &sumCPU}
			ps.Memory = &statsapi.MemoryStats{Time: t, WorkingSetBytes: &sumWS, UsageBytes: &sumUsage}
		}
		out = append(out, ps)
	}
	return out, nil
}

func cpuStats(c *runtimeapi.CpuUsage) *statsapi.CPUStats {
	if c == nil {
		return nil
	}
	s := &statsapi.CPUStats{Time: metav1.NewTime(time.Unix(0, c.GetTimestamp()))}
	if v := c.GetUsageCoreNanoSeconds(); v != nil {
		n := v.GetValue()
		s.UsageCoreNanoSeconds = &n
	}
	if v := c.GetUsageNanoCores(); v != nil {
		n := v.GetValue()
		s.UsageNanoCores = &n
	}
	return s
}

func memoryStats(m *runtimeapi.MemoryUsage) *statsapi.MemoryStats {
	if m == nil {
		return nil
	}
	s := &statsapi.MemoryStats{Time: metav1.NewTime(time.Unix(0, m.GetTimestamp()))}
	for _, f := range []struct {
		v   *runtimeapi.UInt64Value
		dst **uint64
	}{
		{m.GetWorkingSetBytes(), &s.WorkingSetBytes}, {m.GetUsageBytes(), &s.UsageBytes},
		{m.GetRssBytes(), &s.RSSBytes}, {m.GetAvailableBytes(), &s.AvailableBytes},
		{m.GetPageFaults(), &s.PageFaults}, {m.GetMajorPageFaults(), &s.MajorPageFaults},
	} {
		if f.v != nil {
			n := f.v.GetValue()
			*f.dst = &n
		}
	}
	return s
}

// VolumeRoot returns Options.VolumeRoot (defaulted): the folder of the
// pods' folders, where their emptyDirs and logs are (for the disk usage
// an eviction manager measures).
func (r *Runtime) VolumeRoot() string { return r.opts.VolumeRoot }
