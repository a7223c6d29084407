package fakecri

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type image struct {
	id   string   // "sha256:…"
	tags []string // references it was pulled or preloaded as
}

// addImageLocked makes ref present; the image ID is derived from ref, so the
// same name always gets the same ID.
func (s *Server) addImageLocked(ref string) *image {
	if img := s.findImageLocked(ref); img != nil {
		return img
	}
	sum := sha256.Sum256([]byte(ref))
	id := "sha256:" + hex.EncodeToString(sum[:])
	img := &image{id: id, tags: []string{ref}}
	s.images[id] = img
	return img
}

func (s *Server) findImageLocked(ref string) *image {
	if img, ok := s.images[ref]; ok {
		return img
	}
	for _, img := range s.images {
		if slices.Contains(img.tags, ref) {
			return img
		}
	}
	return nil
}

func (img *image) proto() *runtimeapi.Image {
	return &runtimeapi.Image{Id: img.id, RepoTags: slices.Clone(img.tags), Size: 1 << 20, Spec: &runtimeapi.ImageSpec{Image: img.id}}
}

type imageService struct {
	runtimeapi.UnimplementedImageServiceServer
	s *Server
}

func (i *imageService) ListImages(_ context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	s := i.s
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := &runtimeapi.ListImagesResponse{}
	want := req.GetFilter().GetImage().GetImage()
	for _, img := range s.images {
		if want != "" && img.id != want && !slices.Contains(img.tags, want) {
			continue
		}
		resp.Images = append(resp.Images, img.proto())
	}
	slices.SortFunc(resp.Images, func(a, b *runtimeapi.Image) int {
		if a.Id < b.Id {
			return -1
		}
		if a.Id > b.Id {
			return 1
		}
		return 0
	})
	return resp, nil
}

// ImageStatus answers with no image (and no error) when the image is absent,
// as the CRI specifies.
func (i *imageService) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	s := i.s
	s.mu.Lock()
	defer s.mu.Unlock()
	img := s.findImageLocked(req.GetImage().GetImage())
	if img == nil {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	return &runtimeapi.ImageStatusResponse{Image: img.proto()}, nil
}

// PullImage "pulls" any name.
func (i *imageService) PullImage(_ context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	ref := req.GetImage().GetImage()
	if ref == "" {
		return nil, status.Error(codes.InvalidArgument, "image reference is required")
	}
	s := i.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return &runtimeapi.PullImageResponse{ImageRef: s.addImageLocked(ref).id}, nil
}

func (i *imageService) RemoveImage(_ context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	s := i.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if img := s.findImageLocked(req.GetImage().GetImage()); img != nil {
		delete(s.images, img.id)
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

func (i *imageService) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{}, nil
}
