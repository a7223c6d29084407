package fakecri

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RegistryImage describes an image as a registry serves it, so that pulls of
// its references resolve to one image, as they do on a real runtime. Images
// that no RegistryImage describes can be pulled too; each reference is then
// an image of its own.
type RegistryImage struct {
	// Refs are the references that serve this image ("registry.k8s.io/pause:3.9",
	// "k8s.gcr.io/pause:3.9", "busybox" …); normalized as containerd does.
	Refs []string
	// ID is the image ID (the digest of its config), "sha256:…". Default:
	// derived from the first reference.
	ID string
	// Digest is the manifest digest, "sha256:…", which RepoDigests name.
	// Default: derived from the ID.
	Digest string
	// User is the image config's user: "UID", "NAME", "UID:GID" or
	// "NAME:GROUP". ImageStatus reports a numeric UID as Uid and a name as
	// Username.
	User string
	// Size in bytes. Default 1 MiB.
	Size uint64
}

type image struct {
	id      string   // "sha256:…"
	tags    []string // normalized repo:tag references
	digests []string // normalized repo@digest references
	digest  string   // manifest digest
	user    string
	size    uint64
}

// resolveLocked finds what a pull of ref fetches: its image ID, manifest
// digest, user and size.
func (s *Server) resolveLocked(r imageRef) RegistryImage {
	for _, ri := range s.opts.Registry {
		for _, ref := range ri.Refs {
			if pr := parseImageRef(ref); pr == r || (r.digest != "" && pr.repo == r.repo && r.digest == ri.withDefaults().Digest) {
				return ri.withDefaults()
			}
		}
	}
	ri := RegistryImage{Refs: []string{r.String()}}
	if r.digest != "" {
		ri.Digest = r.digest
		ri.ID = digestOf("config", r.digest)
	}
	return ri.withDefaults()
}

func (ri RegistryImage) withDefaults() RegistryImage {
	if ri.ID == "" {
		ri.ID = digestOf("config", parseImageRef(ri.Refs[0]).String())
	}
	if ri.Digest == "" {
		ri.Digest = digestOf("manifest", ri.ID)
	}
	if ri.Size == 0 {
		ri.Size = 1 << 20
	}
	return ri
}

// addImageLocked pulls ref: the image it resolves to becomes present and
// gains the reference, as a tag (repo:tag) or a digest (repo@digest). Every
// image also carries repo@digest for each repository it was pulled from, as
// containerd reports them.
func (s *Server) addImageLocked(ref string) *image {
	r := parseImageRef(ref)
	ri := s.resolveLocked(r)
	img := s.images[ri.ID]
	if img == nil {
		img = &image{id: ri.ID, digest: ri.Digest, user: ri.User, size: ri.Size}
		s.images[img.id] = img
	}
	if r.tag != "" && r.digest == "" && !slices.Contains(img.tags, r.String()) {
		img.tags = append(img.tags, r.String())
		slices.Sort(img.tags)
	}
	if d := r.repo + "@" + img.digest; !slices.Contains(img.digests, d) {
		img.digests = append(img.digests, d)
		slices.Sort(img.digests)
	}
	return img
}

// findImageLocked finds a present image by ID (with or without "sha256:"),
// tag or digest reference.
func (s *Server) findImageLocked(ref string) *image {
	if img, ok := s.images[ref]; ok {
		return img
	}
	if img, ok := s.images["sha256:"+ref]; ok {
		return img
	}
	if ref == "" {
		return nil
	}
	n := parseImageRef(ref).String()
	for _, img := range s.images {
		if slices.Contains(img.tags, n) || slices.Contains(img.digests, n) {
			return img
		}
	}
	return nil
}

func (img *image) proto() *runtimeapi.Image {
	p := &runtimeapi.Image{
		Id:          img.id,
		RepoTags:    slices.Clone(img.tags),
		RepoDigests: slices.Clone(img.digests),
		Size:        img.size,
		Spec:        &runtimeapi.ImageSpec{Image: img.id},
	}
	user, _, _ := strings.Cut(img.user, ":")
	if uid, err := strconv.ParseInt(user, 10, 64); err == nil {
		p.Uid = &runtimeapi.Int64Value{Value: uid}
	} else {
		p.Username = user
	}
	return p
}

type imageService struct {
	runtimeapi.UnimplementedImageServiceServer
	s *Server
}

// ListImages lists the present images; a filter lists the one image its
// reference or ID names.
func (i *imageService) ListImages(_ context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	s := i.s
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := &runtimeapi.ListImagesResponse{}
	if want := req.GetFilter().GetImage().GetImage(); want != "" {
		if img := s.findImageLocked(want); img != nil {
			resp.Images = append(resp.Images, img.proto())
		}
		return resp, nil
	}
	for _, img := range s.images {
		resp.Images = append(resp.Images, img.proto())
	}
	slices.SortFunc(resp.Images, func(a, b *runtimeapi.Image) int { return strings.Compare(a.Id, b.Id) })
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

// PullImage "pulls" any name, in Options.PullLatency on the server's clock
// plus the delay Options.PullScript adds, and fails if the script says so;
// the client's deadline cuts it short with DeadlineExceeded.
func (i *imageService) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	ref := req.GetImage().GetImage()
	if ref == "" {
		return nil, status.Error(codes.InvalidArgument, "image reference is required")
	}
	s := i.s
	latency := s.opts.PullLatency
	var pullErr error
	if s.opts.PullScript != nil {
		delay, err := s.opts.PullScript(ref, req.GetSandboxConfig())
		latency += max(delay, 0)
		pullErr = err
	}
	if err := s.wait(ctx, latency); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	if pullErr != nil {
		if _, ok := status.FromError(pullErr); ok {
			return nil, pullErr
		}
		return nil, status.Error(codes.Unknown, pullErr.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return &runtimeapi.PullImageResponse{ImageRef: s.addImageLocked(ref).id}, nil
}

// RemoveImage removes the image a reference or ID names, with all its tags
// and digests, as containerd's CRI does; an absent image is already removed.
func (i *imageService) RemoveImage(_ context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	s := i.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if img := s.findImageLocked(req.GetImage().GetImage()); img != nil {
		delete(s.images, img.id)
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

// ImageFsInfo reports one image file system, at Options.ImageFsMountpoint,
// used by the sum of the present images' sizes (one inode each).
func (i *imageService) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	s := i.s
	s.mu.Lock()
	defer s.mu.Unlock()
	used, n := s.imageUsageLocked()
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{
		Timestamp:  s.now(),
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: s.opts.ImageFsMountpoint},
		UsedBytes:  &runtimeapi.UInt64Value{Value: used},
		InodesUsed: &runtimeapi.UInt64Value{Value: n},
	}}}, nil
}

// imageUsageLocked sums the sizes of the present images and counts them.
func (s *Server) imageUsageLocked() (used, n uint64) {
	for _, img := range s.images {
		used += img.size
	}
	return used, uint64(len(s.images))
}

// ImageFsStats returns the fake image file system's capacity
// (Options.ImageFsCapacity) and usage (the sum of the present images'
// sizes, as ImageFsInfo reports it), for image garbage collection on the
// fake runtime (agent/imagegc's Options.Stats).
func (s *Server) ImageFsStats() (capacity, used uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	used, _ = s.imageUsageLocked()
	return s.opts.ImageFsCapacity, used
}
