package cri

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

// imageStatus is the CRI status of the container's image, nil when it is
// not present.
func (r *Runtime) imageStatus(ctx context.Context, pod *v1.Pod, c *v1.Container) (*runtimeapi.Image, error) {
	cctx, cancel := r.callCtx(ctx, 0)
	defer cancel()
	resp, err := r.is.ImageStatus(cctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: c.Image}})
	if err != nil {
		return nil, fmt.Errorf("status of image %q of container %q of pod %s: %w", c.Image, c.Name, podRef(pod), fromGRPC(err))
	}
	return resp.GetImage(), nil
}

// ensureImage makes sure the container's image is present: ImageStatus
// first, PullImage only when it is missing (whatever the pull policy, except
// Never, which makes a missing image an error). It returns the image's
// status when it was present, nil when it was just pulled.
func (r *Runtime) ensureImage(ctx context.Context, pod *v1.Pod, c *v1.Container, sandboxCfg *runtimeapi.PodSandboxConfig) (*runtimeapi.Image, error) {
	spec := &runtimeapi.ImageSpec{Image: c.Image}
	img, err := r.imageStatus(ctx, pod, c)
	if err != nil {
		return nil, err
	}
	if img != nil {
		r.event(pod, v1.EventTypeNormal, eventPulled, "Container image %q already present on machine", c.Image)
		return img, nil
	}
	if c.ImagePullPolicy == v1.PullNever {
		return nil, fmt.Errorf("image %q of container %q of pod %s is not present and its pull policy is Never: %w", c.Image, c.Name, podRef(pod), runtime.ErrNotFound)
	}
	pctx, cancel := context.WithTimeout(ctx, r.opts.ImagePullTimeout)
	defer cancel()
	r.log.V(2).Info("pulling image", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "image", c.Image)
	r.event(pod, v1.EventTypeNormal, eventPulling, "Pulling image %q", c.Image)
	start := r.opts.Clock.Now()
	auths, err := r.pullAuths(ctx, pod, c.Image)
	if err != nil {
		r.event(pod, v1.EventTypeWarning, eventFailed, "Failed to pull image %q: %v", c.Image, err)
		return nil, fmt.Errorf("pull image %q of container %q of pod %s: %w", c.Image, c.Name, podRef(pod), err)
	}
	if len(auths) == 0 {
		auths = []*runtimeapi.AuthConfig{nil} // anonymous
	}
	for _, auth := range auths {
		if _, err = r.is.PullImage(pctx, &runtimeapi.PullImageRequest{Image: spec, Auth: auth, SandboxConfig: sandboxCfg}); err == nil {
			break
		}
	}
	if err != nil {
		r.event(pod, v1.EventTypeWarning, eventFailed, "Failed to pull image %q: %v", c.Image, err)
		return nil, fmt.Errorf("pull image %q of container %q of pod %s: %w", c.Image, c.Name, podRef(pod), fromGRPC(err))
	}
	r.event(pod, v1.EventTypeNormal, eventPulled, "Successfully pulled image %q in %s", c.Image, r.opts.Clock.Since(start).Round(1e6))
	return nil, nil
}
