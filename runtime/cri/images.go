package cri

import (
	"context"
	"fmt"
	"math"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

// ListImages lists the images present on the runtime (CRI ListImages),
// with their references, size and pin, as the kubelet's image garbage
// collector and node status read them.
func (r *Runtime) ListImages(ctx context.Context) ([]runtime.Image, error) {
	cctx, cancel := r.callCtx(ctx, 0)
	defer cancel()
	resp, err := r.is.ListImages(cctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		return nil, fmt.Errorf("list images: %w", fromGRPC(err))
	}
	out := make([]runtime.Image, 0, len(resp.GetImages()))
	for _, img := range resp.GetImages() {
		if img.GetId() == "" {
			continue
		}
		size := img.GetSize()
		if size > math.MaxInt64 {
			size = math.MaxInt64
		}
		out = append(out, runtime.Image{
			ID:          img.GetId(),
			RepoTags:    append([]string(nil), img.GetRepoTags()...),
			RepoDigests: append([]string(nil), img.GetRepoDigests()...),
			Size:        int64(size),
			Pinned:      img.GetPinned(),
		})
	}
	return out, nil
}

// RemoveImage removes an image by ID or reference (CRI RemoveImage). An
// image already gone is removed (the CRI makes that no error).
func (r *Runtime) RemoveImage(ctx context.Context, image string) error {
	if image == "" {
		return fmt.Errorf("remove image: %w: no image named", runtime.ErrInvalidArgument)
	}
	cctx, cancel := r.callCtx(ctx, 0)
	defer cancel()
	if _, err := r.is.RemoveImage(cctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: image}}); err != nil {
		return fmt.Errorf("remove image %q: %w", image, fromGRPC(err))
	}
	return nil
}

// ImageFsInfo returns the usage of the file system holding the images
// (CRI ImageFsInfo; the first image file system when the runtime names
// several, as the kubelet's CRI stats provider). A runtime that does not
// serve it gives an error wrapping runtime.ErrUnimplemented; one that
// answers with no file system, runtime.ErrNotFound.
func (r *Runtime) ImageFsInfo(ctx context.Context) (runtime.ImageFsUsage, error) {
	cctx, cancel := r.callCtx(ctx, 0)
	defer cancel()
	resp, err := r.is.ImageFsInfo(cctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		return runtime.ImageFsUsage{}, fmt.Errorf("image fs info: %w", fromGRPC(err))
	}
	fss := resp.GetImageFilesystems()
	if len(fss) == 0 {
		return runtime.ImageFsUsage{}, fmt.Errorf("image fs info: %w: the runtime names no image file system", runtime.ErrNotFound)
	}
	fs := fss[0]
	u := runtime.ImageFsUsage{
		Mountpoint: fs.GetFsId().GetMountpoint(),
		UsedBytes:  fs.GetUsedBytes().GetValue(),
		InodesUsed: fs.GetInodesUsed().GetValue(),
	}
	if ts := fs.GetTimestamp(); ts > 0 {
		u.Timestamp = time.Unix(0, ts)
	}
	if fs.GetUsedBytes() == nil {
		return u, fmt.Errorf("image fs info: %w: no used bytes for %q", runtime.ErrUnknown, u.Mountpoint)
	}
	return u, nil
}
