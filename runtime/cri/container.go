package cri

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

// containerConfig builds the CRI config of one container instance, setting
// up the volumes it mounts. img is its image's CRI status, nil when not
// known (runAsNonRoot is then checked as if the image ran as root). Its
// errors (runAsNonRoot, a volume that cannot be set up) wrap
// runtime.ErrFailedPrecondition.
//
// targetID, when set, is the container whose PID namespace this one joins
// (an ephemeral container's target): the kubelet's NamespaceMode_TARGET,
// unless the pod shares one PID namespace or uses the node's.
func (r *Runtime) containerConfig(ctx context.Context, pod *v1.Pod, c *v1.Container, restartCount int, img *runtimeapi.Image, sandboxID, targetID string) (*runtimeapi.ContainerConfig, error) {
	if err := verifyRunAsNonRoot(pod, c, effectiveSecurityContext(pod, c), img); err != nil {
		return nil, err
	}
	podIPs := sync.OnceValue(func() []string { return r.sandboxIPs(ctx, sandboxID) })
	ro, err := r.runOptions(ctx, pod, c, podIPs)
	if err != nil {
		return nil, err
	}
	hosts, err := r.hostsMount(pod, c, podIPs)
	if err != nil {
		return nil, failedPrecondition(err)
	}
	if hosts != nil {
		ro.mounts = append(ro.mounts, hosts)
	}
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(restartCount)},
		Image:       &runtimeapi.ImageSpec{Image: c.Image},
		Command:     ro.command,
		Args:        ro.args,
		WorkingDir:  c.WorkingDir,
		Labels:      containerLabels(pod, c),
		Annotations: containerAnnotations(pod, c, runtime.HashContainer(c), restartCount),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Mounts:      ro.mounts,
		Envs:        ro.envs,
		Linux: &runtimeapi.LinuxContainerConfig{
			SecurityContext: r.containerSecurityContext(pod, c),
			Resources:       linuxResources(pod, c, r.opts.NodeMemoryCapacity),
		},
	}
	if ns := cfg.Linux.SecurityContext.NamespaceOptions; targetID != "" && ns.Pid == runtimeapi.NamespaceMode_CONTAINER {
		ns.Pid, ns.TargetId = runtimeapi.NamespaceMode_TARGET, targetID
	}
	return cfg, nil
}

// startContainer creates and starts one container instance in a sandbox,
// as the kubelet's startContainer does: the image, the container's
// configuration, CreateContainer, StartContainer, then the postStart
// handler. A failure is a *runtime.StartError (wrapped, naming container
// and pod) with the kubelet's reason: those of ensureImage,
// CreateContainerConfigError (nothing was created: a runAsNonRoot refusal,
// the options provider's error, a volume that cannot be set up),
// CreateContainerError, RunContainerError or PostStartHookError; each but
// the last is also a Failed event "Error: ...", as the kubelet records it.
// targetID is containerConfig's.
func (r *Runtime) startContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, sandboxID string, sandboxCfg *runtimeapi.PodSandboxConfig, restartCount int, targetID string) error {
	img, err := r.ensureImage(ctx, pod, c, sandboxCfg)
	if err != nil {
		var se *runtime.StartError
		if !errors.As(err, &se) {
			se = startError(c, runtime.ErrImagePull, err.Error(), err)
		}
		// As the kubelet: the event names the reason, the status tells more.
		return r.startFailed(pod, c, se, se.ReasonText())
	}
	if img == nil && needsImageUser(effectiveSecurityContext(pod, c)) {
		// Just pulled: runAsNonRoot needs the image's user.
		if img, err = r.imageStatus(ctx, pod, c); err != nil {
			return r.configError(pod, c, err)
		}
	}
	cfg, err := r.containerConfig(ctx, pod, c, restartCount, img, sandboxID, targetID)
	if err != nil {
		return r.configError(pod, c, err)
	}
	if err := r.containerFiles(pod, c, restartCount, cfg); err != nil {
		return r.configError(pod, c, err)
	}
	cctx, cancel := r.callCtx(ctx, 0)
	resp, err := r.rs.CreateContainer(cctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId:  sandboxID,
		Config:        cfg,
		SandboxConfig: sandboxCfg,
	})
	cancel()
	if err != nil {
		se := startError(c, runtime.ErrCreateContainer, status.Convert(err).Message(), fmt.Errorf("create container: %w", fromGRPC(err)))
		return r.startFailed(pod, c, se, se.Message)
	}
	r.event(pod, v1.EventTypeNormal, eventCreated, "Created container %s", c.Name)
	id := resp.GetContainerId()
	if err := r.startCreated(ctx, pod, c.Name, id); err != nil {
		return err
	}
	r.log.V(2).Info("container started", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID, "container", c.Name, "containerID", id, "restartCount", restartCount)
	return r.postStart(ctx, pod, c, id, sandboxID)
}

// startFailed records a Failed event "Error: eventText" and returns se,
// naming container and pod.
func (r *Runtime) startFailed(pod *v1.Pod, c *v1.Container, se *runtime.StartError, eventText string) error {
	r.event(pod, v1.EventTypeWarning, eventFailed, "Error: %s", eventText)
	return fmt.Errorf("container %q of pod %s: %w", c.Name, podRef(pod), se)
}

// configError is startFailed for a CreateContainerConfigError: nothing
// was created, and the next sync tries again.
func (r *Runtime) configError(pod *v1.Pod, c *v1.Container, err error) error {
	se := startError(c, runtime.ErrCreateContainerConfig, err.Error(), err)
	return r.startFailed(pod, c, se, se.Message)
}

// startCreated starts the created instance id of container name. A
// failure is a RunContainerError (a *runtime.StartError, wrapped, naming
// container and pod) and a Failed event "Error: MESSAGE", as in the
// kubelet.
func (r *Runtime) startCreated(ctx context.Context, pod *v1.Pod, name, id string) error {
	cctx, cancel := r.callCtx(ctx, 0)
	defer cancel()
	if _, err := r.rs.StartContainer(cctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		msg := status.Convert(err).Message()
		r.event(pod, v1.EventTypeWarning, eventFailed, "Error: %s", msg)
		se := &runtime.StartError{Container: name, Reason: runtime.ErrRunContainer, Message: msg,
			Err: fmt.Errorf("start container %q: %w", id, fromGRPC(err))}
		return fmt.Errorf("container %q of pod %s: %w", name, podRef(pod), se)
	}
	// As the kubelet, right after the start: a container that exits at once
	// is never seen running by a relist, yet it started.
	r.event(pod, v1.EventTypeNormal, eventStarted, "Started container %s", name)
	return nil
}

// stopContainer stops one container with a grace period (floored at
// MinimumGracePeriod). The call may last the grace period plus Timeout. A
// container that vanished counts as stopped.
func (r *Runtime) stopContainer(ctx context.Context, id string, gracePeriod int64) error {
	gracePeriod = max(gracePeriod, MinimumGracePeriod)
	cctx, cancel := r.callCtx(ctx, graceDuration(gracePeriod))
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
	for i, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy != v1.ContainerRestartPolicyAlways {
			errs = append(errs, fmt.Errorf("spec.initContainers[%d].restartPolicy: only Always (a sidecar) is allowed, got %q", i, *c.RestartPolicy))
		}
	}
	errs = append(errs, validateContainerFields(pod)...)
	errs = append(errs, validateSecurity(pod)...)
	errs = append(errs, validateHostFields(pod)...)
	errs = append(errs, validateVolumes(pod)...)
	seen := map[string]bool{}
	for i, c := range append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		switch {
		case c.Name == "":
			errs = append(errs, fmt.Errorf("container #%d has no name", i))
		case seen[c.Name]:
			errs = append(errs, fmt.Errorf("container %q: duplicate name", c.Name))
		case c.Image == "":
			errs = append(errs, fmt.Errorf("container %q: no image", c.Name))
		}
		seen[c.Name] = true
	}
	for i, ec := range pod.Spec.EphemeralContainers {
		// Only what would confuse the plan: the rest of an ephemeral
		// container is checked when it starts (validateEphemeral), so
		// that a bad one fails alone, not the pod it was added to.
		if ec.Name == "" || seen[ec.Name] {
			errs = append(errs, fmt.Errorf("spec.ephemeralContainers[%d].name: %q is empty or not unique among the pod's containers", i, ec.Name))
		}
		seen[ec.Name] = true
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid pod %s: %w", podRef(pod), errors.Join(runtime.ErrInvalidArgument, err))
	}
	return nil
}

// maxGraceSeconds is the longest grace period a time.Duration holds, with
// an hour to spare for the call's own timeout.
const maxGraceSeconds = int64(math.MaxInt64/int64(time.Second)) - 3600

// graceDuration converts a grace period in seconds to a duration,
// saturating: the API server accepts any non-negative int64
// (terminationGracePeriodSeconds: 9223372036854775807), which multiplied
// by time.Second would wrap around to a deadline already past. The wait
// is then bounded by about 292 years, and by the caller's context.
func graceDuration(seconds int64) time.Duration {
	return time.Duration(min(seconds, maxGraceSeconds)) * time.Second
}
