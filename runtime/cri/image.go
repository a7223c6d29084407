package cri

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

// imageStatus is the CRI status of the container's image, nil when it is
// not present.
func (r *Runtime) imageStatus(ctx context.Context, pod *v1.Pod, c *v1.Container) (*runtimeapi.Image, error) {
	img, err := r.imageStatusRaw(ctx, c.Image)
	if err != nil {
		return nil, fmt.Errorf("status of image %q of container %q of pod %s: %w", c.Image, c.Name, podRef(pod), fromGRPC(err))
	}
	return img, nil
}

// imageStatusRaw is imageStatus with the runtime's gRPC error as it came.
func (r *Runtime) imageStatusRaw(ctx context.Context, image string) (*runtimeapi.Image, error) {
	cctx, cancel := r.callCtx(ctx, 0)
	defer cancel()
	resp, err := r.is.ImageStatus(cctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil {
		return nil, err
	}
	return resp.GetImage(), nil
}

// pullBackOffKey names a pod's image in the image pull back-off.
func pullBackOffKey(pod *v1.Pod, image string) string {
	return string(pod.UID) + "_" + image
}

// ensureImage makes sure the container's image is present, as the
// kubelet's image manager does: the name is checked (InvalidImageName),
// then ImageStatus (ImageInspectError), and PullImage only when the image
// is missing (whatever the pull policy, except Never, which makes a
// missing image ErrImageNeverPull). A failed pull (ErrImagePull) starts
// the pod's back-off for the image: until it expires, the pod's syncs do
// not pull it again and report ImagePullBackOff. It returns the image's
// status when it was present, nil when it was just pulled; its errors are
// *runtime.StartError, and it records the kubelet's image events.
func (r *Runtime) ensureImage(ctx context.Context, pod *v1.Pod, c *v1.Container, sandboxCfg *runtimeapi.PodSandboxConfig) (*runtimeapi.Image, error) {
	if err := checkImageName(c.Image); err != nil {
		msg := fmt.Sprintf("Failed to apply default image tag %q: %v", c.Image, err)
		r.event(pod, v1.EventTypeWarning, eventInspectFailed, "%s", msg)
		return nil, startError(c, runtime.ErrInvalidImageName, msg, fmt.Errorf("%w: %w", runtime.ErrInvalidArgument, err))
	}
	img, err := r.imageStatusRaw(ctx, c.Image)
	if err != nil {
		msg := fmt.Sprintf("Failed to inspect image %q: %v", c.Image, err)
		r.event(pod, v1.EventTypeWarning, eventInspectFailed, "%s", msg)
		return nil, startError(c, runtime.ErrImageInspect, msg, fmt.Errorf("status of image %q: %w", c.Image, fromGRPC(err)))
	}
	if img != nil {
		r.event(pod, v1.EventTypeNormal, eventPulled, "Container image %q already present on machine", c.Image)
		return img, nil
	}
	if c.ImagePullPolicy == v1.PullNever {
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		r.event(pod, v1.EventTypeWarning, eventErrImageNeverPull, "%s", msg)
		return nil, startError(c, runtime.ErrImageNeverPull, msg, runtime.ErrNotFound)
	}
	key := pullBackOffKey(pod, c.Image)
	if left, prev := r.pullBackOff.leftAfter(key, r.opts.Clock.Now()); left > 0 {
		msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
		r.event(pod, v1.EventTypeNormal, eventBackOff, "%s", msg)
		if prev != "" {
			// As the kubelet: the waiting message carries the failed pull's.
			msg += ": " + prev
		}
		return nil, startError(c, runtime.ErrImagePullBackOff, msg, nil)
	}
	pctx, cancel := context.WithTimeout(ctx, r.opts.ImagePullTimeout)
	defer cancel()
	r.log.V(2).Info("pulling image", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "image", c.Image)
	r.event(pod, v1.EventTypeNormal, eventPulling, "Pulling image %q", c.Image)
	start := r.opts.Clock.Now()
	auths, err := r.pullAuths(ctx, pod, c.Image)
	if err != nil {
		// No back-off: the credentials may be there at the next sync.
		r.event(pod, v1.EventTypeWarning, eventFailed, "Failed to pull image %q: %v", c.Image, err)
		return nil, startError(c, runtime.ErrImagePull, err.Error(), err)
	}
	if len(auths) == 0 {
		auths = []*runtimeapi.AuthConfig{nil} // anonymous
	}
	var pullErrs []error
	for _, auth := range auths {
		_, err := r.is.PullImage(pctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: c.Image}, Auth: auth, SandboxConfig: sandboxCfg})
		if err == nil {
			pullErrs = nil
			break
		}
		pullErrs = append(pullErrs, err)
	}
	if len(pullErrs) > 0 {
		msg := pullErrorText(pullErrs)
		r.event(pod, v1.EventTypeWarning, eventFailed, "Failed to pull image %q: %s", c.Image, msg)
		if ctx.Err() == nil {
			// A pull cut short by the caller (the pod's sync was
			// cancelled) says nothing about the image: no back-off.
			r.pullBackOff.nextNoted(key, runtime.ErrImagePull.Error()+": "+msg)
		}
		return nil, startError(c, runtime.ErrImagePull, msg,
			fmt.Errorf("pull image %q: %w", c.Image, fromGRPC(pullErrs[len(pullErrs)-1])))
	}
	r.event(pod, v1.EventTypeNormal, eventPulled, "Successfully pulled image %q in %s", c.Image, r.opts.Clock.Since(start).Round(time.Millisecond))
	return nil, nil
}

// pullErrorText is the message of a failed pull: the runtime's error, or
// the errors of each set of credentials tried, in brackets (as the
// kubelet's aggregate).
func pullErrorText(errs []error) string {
	if len(errs) == 1 {
		return errs[0].Error()
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return "[" + strings.Join(msgs, ", ") + "]"
}

// startError is a failed start of container c with the kubelet's reason
// and message; cause (nil or classified with a runtime sentinel) is kept
// for errors.Is.
func startError(c *v1.Container, reason error, msg string, cause error) *runtime.StartError {
	return &runtime.StartError{Container: c.Name, Reason: reason, Message: msg, Err: cause}
}
