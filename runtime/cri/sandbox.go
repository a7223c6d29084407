package cri

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

// podRef names a pod in errors and logs: namespace/name (uid).
func podRef(pod *v1.Pod) string {
	return fmt.Sprintf("%s/%s (%s)", pod.Namespace, pod.Name, pod.UID)
}

// kubeletPodName names a pod as the kubelet's messages do:
// "NAME_NAMESPACE(UID)".
func kubeletPodName(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

func (r *Runtime) usesNodeNetwork(pod *v1.Pod) bool {
	return r.opts.NetworkMode == NetworkModeNode || pod.Spec.HostNetwork
}

func (r *Runtime) namespaceOptions(pod *v1.Pod) *runtimeapi.NamespaceOption {
	o := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD}
	if r.usesNodeNetwork(pod) {
		o.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace {
		o.Pid = runtimeapi.NamespaceMode_POD
	}
	return o
}

// sandboxConfig builds the CRI sandbox config of a pod: kubelet labels and
// annotations, the pod's own cgroup under CgroupParent, its sysctls, the
// node network namespace (and then no hostname) unless NetworkModePod lets
// the pod have its own, with the kubelet's hostname. Its error (a hostname
// or FQDN the kernel cannot take) keeps the sandbox from being created.
func (r *Runtime) sandboxConfig(pod *v1.Pod, attempt uint32) (*runtimeapi.PodSandboxConfig, error) {
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name:      pod.Name,
			Namespace: pod.Namespace,
			Uid:       string(pod.UID),
			Attempt:   attempt,
		},
		Labels:       sandboxLabels(pod),
		Annotations:  sandboxAnnotations(pod),
		LogDirectory: r.logDirectory(pod),
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent:    r.opts.CgroupParent + "/pod" + string(pod.UID),
			SecurityContext: r.sandboxSecurityContext(pod),
			Sysctls:         podSysctls(pod),
		},
	}
	if !r.usesNodeNetwork(pod) {
		hostname, domain, err := podHostnameAndDomain(pod, r.opts.ClusterDomain)
		if err != nil {
			return nil, fmt.Errorf("sandbox of pod %s: %w", podRef(pod), err)
		}
		if cfg.Hostname, err = kernelHostname(pod, hostname, domain); err != nil {
			return nil, fmt.Errorf("sandbox of pod %s: %w", podRef(pod), err)
		}
	}
	return cfg, nil
}

func (r *Runtime) runSandbox(ctx context.Context, pod *v1.Pod, cfg *runtimeapi.PodSandboxConfig) (string, error) {
	cctx, cancel := r.callCtx(ctx, 0)
	defer cancel()
	resp, err := r.rs.RunPodSandbox(cctx, &runtimeapi.RunPodSandboxRequest{Config: cfg, RuntimeHandler: r.opts.RuntimeHandler})
	if err != nil {
		return "", fmt.Errorf("run sandbox of pod %s (attempt %d): %w", podRef(pod), cfg.GetMetadata().GetAttempt(), fromGRPC(err))
	}
	r.log.V(2).Info("sandbox started", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID, "sandbox", resp.GetPodSandboxId())
	r.warnUnsupported(pod)
	return resp.GetPodSandboxId(), nil
}

// stopSandbox stops a sandbox; one that vanished counts as stopped.
func (r *Runtime) stopSandbox(ctx context.Context, id string) error {
	cctx, cancel := r.callCtx(ctx, 0)
	defer cancel()
	_, err := r.rs.StopPodSandbox(cctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
	if err := ignoreNotFound(fromGRPC(err)); err != nil {
		return fmt.Errorf("stop sandbox %q: %w", id, err)
	}
	return nil
}

// removeSandbox removes a sandbox; one that vanished counts as removed.
func (r *Runtime) removeSandbox(ctx context.Context, id string) error {
	cctx, cancel := r.callCtx(ctx, 0)
	defer cancel()
	_, err := r.rs.RemovePodSandbox(cctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
	if err := ignoreNotFound(fromGRPC(err)); err != nil {
		return fmt.Errorf("remove sandbox %q: %w", id, err)
	}
	return nil
}

// newestSandbox returns the newest sandbox status (statuses are sorted
// newest first by GetPodStatus), or nil.
func newestSandbox(s *runtime.PodStatus) *runtime.SandboxStatus {
	var newest *runtime.SandboxStatus
	for _, sb := range s.SandboxStatuses {
		if newest == nil || sb.CreatedAt.After(newest.CreatedAt) || (sb.CreatedAt.Equal(newest.CreatedAt) && sb.Attempt > newest.Attempt) {
			newest = sb
		}
	}
	return newest
}
