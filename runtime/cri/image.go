package cri

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

// ensureImage makes sure the container's image is present: ImageStatus
// first, PullImage only when it is missing (whatever the pull policy, except
// Never, which makes a missing image an error).
//
// It returns the image's user, read from ImageStatus (again after a pull),
// for the runAsNonRoot check.
func (r *Runtime) ensureImage(ctx context.Context, pod *v1.Pod, c *v1.Container, sandboxCfg *runtimeapi.PodSandboxConfig) (imageUser, error) {
	spec := &runtimeapi.ImageSpec{Image: c.Image}
	status := func() (*runtimeapi.Image, error) {
		cctx, cancel := r.callCtx(ctx, 0)
		defer cancel()
		resp, err := r.is.ImageStatus(cctx, &runtimeapi.ImageStatusRequest{Image: spec})
		if err != nil {
			return nil, fmt.Errorf("status of image %q of container %q of pod %s: %w", c.Image, c.Name, podRef(pod), fromGRPC(err))
		}
		return resp.GetImage(), nil
	}
	img, err := status()
	if err != nil || img != nil {
		if img != nil {
			r.event(pod, v1.EventTypeNormal, EventPulled, "Container image %q already present on machine", c.Image)
		}
		return userOf(img), err
	}
	if c.ImagePullPolicy == v1.PullNever {
		r.event(pod, v1.EventTypeWarning, EventErrImageNeverPull, "Container image %q is not present with pull policy of Never", c.Image)
		return imageUser{}, fmt.Errorf("image %q of container %q of pod %s is not present and its pull policy is Never: %w", c.Image, c.Name, podRef(pod), runtime.ErrNotFound)
	}
	pctx, cancel := context.WithTimeout(ctx, r.opts.ImagePullTimeout)
	defer cancel()
	r.log.V(2).Info("pulling image", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "image", c.Image)
	r.event(pod, v1.EventTypeNormal, EventPulling, "Pulling image %q", c.Image)
	begin := r.opts.Clock.Now()
	if _, err := r.is.PullImage(pctx, &runtimeapi.PullImageRequest{Image: spec, SandboxConfig: sandboxCfg}); err != nil {
		r.event(pod, v1.EventTypeWarning, EventFailed, "Failed to pull image %q: %v", c.Image, fromGRPC(err))
		return imageUser{}, fmt.Errorf("pull image %q of container %q of pod %s: %w", c.Image, c.Name, podRef(pod), fromGRPC(err))
	}
	r.event(pod, v1.EventTypeNormal, EventPulled, "Successfully pulled image %q in %s", c.Image, r.opts.Clock.Since(begin).Round(time.Millisecond))
	if !needsImageUser(pod, c) {
		return imageUser{}, nil
	}
	img, err = status()
	return userOf(img), err
}

func userOf(img *runtimeapi.Image) imageUser {
	if img == nil {
		return imageUser{}
	}
	u := imageUser{name: img.GetUsername()}
	if uid := img.GetUid(); uid != nil {
		v := uid.GetValue()
		u.uid = &v
	}
	return u
}

// needsImageUser: the container's runAsNonRoot is to be checked against
// the image.
func needsImageUser(pod *v1.Pod, c *v1.Container) bool {
	sc := effectiveSecurityContext(pod, c)
	return sc.RunAsNonRoot != nil && *sc.RunAsNonRoot && sc.RunAsUser == nil
}
