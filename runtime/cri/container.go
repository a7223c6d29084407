package cri

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

// containerConfig builds the CRI config of one container instance.
func (r *Runtime) containerConfig(pod *v1.Pod, c *v1.Container, restartCount int, user imageUser, ec envContext) (*runtimeapi.ContainerConfig, error) {
	sc := effectiveSecurityContext(pod, c)
	if err := verifyRunAsNonRoot(pod, c, sc, user); err != nil {
		return nil, err
	}
	var nodeMemory int64
	if m, ok := r.opts.NodeAllocatable[v1.ResourceMemory]; ok {
		nodeMemory = m.Value()
	}
	names, values, err := containerEnv(pod, c, ec)
	if err != nil {
		return nil, fmt.Errorf("container %q of pod %s: %w: %w", c.Name, podRef(pod), runtime.ErrInvalidArgument, err)
	}
	mounts, err := r.volumeMounts(pod, c)
	if err != nil {
		return nil, fmt.Errorf("container %q of pod %s: %w", c.Name, podRef(pod), err)
	}
	// The termination message file and the log are best effort (a
	// VolumeRoot that cannot be written must not stop pods): without them
	// the status has no termination message.
	tm, tmHost, err := r.terminationMount(pod, c, restartCount)
	if err != nil {
		r.log.V(1).Info("no termination message file", "pod", podRef(pod), "container", c.Name, "err", err)
	}
	if tm != nil {
		mounts = append(mounts, tm)
	}
	lookup := func(n string) (string, bool) { v, ok := values[n]; return v, ok }
	expandAll := func(in []string) []string {
		if in == nil {
			return nil
		}
		out := make([]string, len(in))
		for i, s := range in {
			out[i] = expand(s, lookup)
		}
		return out
	}
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(restartCount)},
		Image:       &runtimeapi.ImageSpec{Image: c.Image},
		Command:     expandAll(c.Command),
		Args:        expandAll(c.Args),
		WorkingDir:  c.WorkingDir,
		Labels:      containerLabels(pod, c),
		Annotations: containerAnnotations(pod, c, runtime.HashContainer(c), restartCount),
		Mounts:      mounts,
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       linuxResources(pod, c, nodeMemory),
			SecurityContext: r.linuxSecurityContext(pod, sc),
		},
	}
	for _, n := range names {
		cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: n, Value: []byte(values[n])})
	}
	if tmHost != "" {
		cfg.Annotations[annotationTerminationLog] = tmHost
	}
	if logDir := r.logDirectory(pod); logDir != "" {
		if err := os.MkdirAll(filepath.Join(logDir, c.Name), 0o755); err != nil {
			r.log.V(1).Info("no log folder", "pod", podRef(pod), "container", c.Name, "err", err)
		} else {
			cfg.LogPath = filepath.Join(c.Name, strconv.Itoa(restartCount)+".log")
		}
	}
	return cfg, nil
}

// startContainer creates and starts one container instance in a sandbox.
func (r *Runtime) startContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, sandboxID string, sandboxCfg *runtimeapi.PodSandboxConfig, restartCount int) error {
	user, err := r.ensureImage(ctx, pod, c, sandboxCfg)
	if err != nil {
		return err
	}
	cfg, err := r.containerConfig(pod, c, restartCount, user, r.envContext(ctx, c, sandboxID))
	if err != nil {
		r.event(pod, v1.EventTypeWarning, EventFailed, "Error: %v", err)
		return err
	}
	cctx, cancel := r.callCtx(ctx, 0)
	resp, err := r.rs.CreateContainer(cctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId:  sandboxID,
		Config:        cfg,
		SandboxConfig: sandboxCfg,
	})
	cancel()
	if err != nil {
		r.event(pod, v1.EventTypeWarning, EventFailed, "Error: %v", fromGRPC(err))
		return fmt.Errorf("create container %q of pod %s: %w", c.Name, podRef(pod), fromGRPC(err))
	}
	id := resp.GetContainerId()
	r.event(pod, v1.EventTypeNormal, EventCreated, "Created container: %s", c.Name)
	if err := r.startCreated(ctx, id); err != nil {
		r.event(pod, v1.EventTypeWarning, EventFailed, "Error: %v", err)
		return fmt.Errorf("container %q of pod %s: %w", c.Name, podRef(pod), err)
	}
	r.event(pod, v1.EventTypeNormal, EventStarted, "Started container %s", c.Name)
	r.log.V(2).Info("container started", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID, "container", c.Name, "containerID", id, "restartCount", restartCount)
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		return r.postStart(ctx, pod, c, id, sandboxID)
	}
	return nil
}

// postStart runs the container's postStart handler (bounded by
// Options.Timeout); when it fails, the container is killed with the pod's
// grace period, as the kubelet does, and restarts by the restart policy.
func (r *Runtime) postStart(ctx context.Context, pod *v1.Pod, c *v1.Container, id, sandboxID string) error {
	hctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	err := r.hooks.RunHook(hctx, HookTarget{Pod: pod, Container: c, ContainerID: id, PodIP: r.podIPFor(ctx, c.Lifecycle.PostStart, sandboxID)}, c.Lifecycle.PostStart)
	cancel()
	if err == nil {
		return nil
	}
	r.event(pod, v1.EventTypeWarning, EventFailedPostStartHook, "PostStartHook failed: %v", err)
	r.log.Info("postStart hook failed; killing the container", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "err", err)
	herr := fmt.Errorf("container %q of pod %s: %w: FailedPostStartHook: %w", c.Name, podRef(pod), ErrHook, err)
	r.event(pod, v1.EventTypeNormal, EventKilling, "FailedPostStartHook")
	if kerr := r.stopContainer(ctx, id, gracePeriodOf(pod)); kerr != nil {
		return errors.Join(herr, kerr)
	}
	return herr
}

// envContext gives the downward API what it needs; the sandbox's IPs are
// read only when an env var asks for them.
func (r *Runtime) envContext(ctx context.Context, c *v1.Container, sandboxID string) envContext {
	ec := envContext{hostIPs: r.opts.NodeIPs, allocatable: r.opts.NodeAllocatable}
	needsIP := false
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && strings.HasPrefix(e.ValueFrom.FieldRef.FieldPath, "status.podIP") {
			needsIP = true
		}
	}
	if needsIP && sandboxID != "" {
		if st, err := r.sandboxStatus(ctx, sandboxID); err == nil && st != nil {
			if ip := st.GetNetwork().GetIp(); ip != "" {
				ec.podIPs = append(ec.podIPs, ip)
			}
			for _, ip := range st.GetNetwork().GetAdditionalIps() {
				ec.podIPs = append(ec.podIPs, ip.GetIp())
			}
		}
	}
	if len(ec.podIPs) == 0 {
		ec.podIPs = r.opts.NodeIPs
	}
	return ec
}

// podIPFor reads the sandbox's IP when an httpGet handler needs it.
func (r *Runtime) podIPFor(ctx context.Context, h *v1.LifecycleHandler, sandboxID string) string {
	if h == nil || h.HTTPGet == nil || h.HTTPGet.Host != "" || sandboxID == "" {
		return ""
	}
	st, err := r.sandboxStatus(ctx, sandboxID)
	if err != nil {
		return ""
	}
	return st.GetNetwork().GetIp()
}

// clampGrace bounds a grace period to [MinimumGracePeriod, MaximumGracePeriod].
func clampGrace(gp int64) int64 {
	return min(max(gp, MinimumGracePeriod), MaximumGracePeriod)
}

func (r *Runtime) startCreated(ctx context.Context, id string) error {
	cctx, cancel := r.callCtx(ctx, 0)
	defer cancel()
	if _, err := r.rs.StartContainer(cctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		return fmt.Errorf("start container %q: %w", id, fromGRPC(err))
	}
	return nil
}

// stopContainer stops one container with a grace period (floored at
// MinimumGracePeriod). The call may last the grace period plus Timeout. A
// container that vanished counts as stopped.
func (r *Runtime) stopContainer(ctx context.Context, id string, gracePeriod int64) error {
	gracePeriod = clampGrace(gracePeriod)
	cctx, cancel := r.callCtx(ctx, time.Duration(gracePeriod)*time.Second)
	defer cancel()
	_, err := r.rs.StopContainer(cctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: gracePeriod})
	if err := ignoreNotFound(fromGRPC(err)); err != nil {
		return fmt.Errorf("stop container %q (grace period %ds): %w", id, gracePeriod, err)
	}
	return nil
}

// removeContainer removes one container; one that vanished counts as removed.
func (r *Runtime) removeContainer(ctx context.Context, id string) error {
	cctx, cancel := r.callCtx(ctx, 0)
	defer cancel()
	_, err := r.rs.RemoveContainer(cctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
	if err := ignoreNotFound(fromGRPC(err)); err != nil {
		return fmt.Errorf("remove container %q: %w", id, err)
	}
	return nil
}

// validatePod rejects specs the adapter cannot run, naming pod and container.
func validatePod(pod *v1.Pod) error {
	if pod == nil {
		return fmt.Errorf("sync pod: no pod given: %w", runtime.ErrInvalidArgument)
	}
	var errs []error
	if pod.UID == "" || pod.Name == "" || pod.Namespace == "" {
		errs = append(errs, errors.New("uid, name and namespace are required"))
	}
	if len(pod.Spec.Containers) == 0 {
		errs = append(errs, errors.New("no containers"))
	}
	if len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, fmt.Errorf("spec.ephemeralContainers: not supported by podlife's CRI adapter: %w", runtime.ErrUnimplemented))
	}
	seen := map[string]bool{}
	check := func(field string, i int, c *v1.Container) {
		switch {
		case c.Name == "":
			errs = append(errs, fmt.Errorf("%s[%d] has no name", field, i))
		case seen[c.Name]:
			errs = append(errs, fmt.Errorf("%s[%d] %q: duplicate name", field, i, c.Name))
		case c.Image == "":
			errs = append(errs, fmt.Errorf("container %q: no image", c.Name))
		}
		seen[c.Name] = true
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		check("spec.initContainers", i, c)
		if c.RestartPolicy != nil && *c.RestartPolicy != v1.ContainerRestartPolicyAlways {
			errs = append(errs, fmt.Errorf("spec.initContainers[%d].restartPolicy: only Always is supported, got %q", i, *c.RestartPolicy))
		}
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		check("spec.containers", i, c)
		if c.RestartPolicy != nil {
			errs = append(errs, fmt.Errorf("spec.containers[%d].restartPolicy: not supported by podlife's CRI adapter: %w", i, runtime.ErrUnimplemented))
		}
	}
	errs = append(errs, unsupported(pod)...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid pod %s: %w", podRef(pod), errors.Join(runtime.ErrInvalidArgument, err))
	}
	return nil
}
