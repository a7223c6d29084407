package cri_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/fakecri"
)

// ListImages, RemoveImage and ImageFsInfo carry what image garbage
// collection and the Node's image list need: IDs, references, sizes,
// the image file system's mount point and usage.
func TestImageListRemoveFsInfo(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{
		Images:            []string{"registry.k8s.io/pause:3.10", "busybox"},
		Registry:          []fakecri.RegistryImage{{Refs: []string{"busybox"}, ID: "sha256:bb", Digest: "sha256:bbd", Size: 4000}},
		ImageFsMountpoint: "/var/lib/images",
	})
	rt := newRuntime(t, ep)
	ctx := ctxT(t)

	imgs, err := rt.ListImages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var bb *runtime.Image
	for i := range imgs {
		if imgs[i].ID == "sha256:bb" {
			bb = &imgs[i]
		}
	}
	want := runtime.Image{ID: "sha256:bb", RepoTags: []string{"docker.io/library/busybox:latest"},
		RepoDigests: []string{"docker.io/library/busybox@sha256:bbd"}, Size: 4000}
	if len(imgs) != 2 || bb == nil {
		t.Fatalf("ListImages = %+v, want 2 images with sha256:bb", imgs)
	}
	if d := cmp.Diff(want, *bb); d != "" {
		t.Errorf("busybox (-want +got):\n%s", d)
	}

	u, err := rt.ImageFsInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if u.Mountpoint != "/var/lib/images" || u.UsedBytes != 4000+1<<20 || u.InodesUsed != 2 || u.Timestamp.IsZero() {
		t.Errorf("ImageFsInfo = %+v, want /var/lib/images used by 4000 B + 1 MiB, 2 inodes, a timestamp", u)
	}
	if capacity, used := srv.ImageFsStats(); capacity != 100<<30 || used != u.UsedBytes {
		t.Errorf("ImageFsStats = %d, %d; want 100 GiB and %d", capacity, used, u.UsedBytes)
	}

	if err := rt.RemoveImage(ctx, "sha256:bb"); err != nil {
		t.Fatal(err)
	}
	if srv.HasImage("busybox") {
		t.Error("busybox still present after RemoveImage")
	}
	if err := rt.RemoveImage(ctx, "sha256:bb"); err != nil {
		t.Errorf("removing an absent image: %v, want nil", err)
	}
	if err := rt.RemoveImage(ctx, ""); !errors.Is(err, runtime.ErrInvalidArgument) {
		t.Errorf("RemoveImage(\"\") = %v, want ErrInvalidArgument", err)
	}

	srv.FailNext("ImageFsInfo", codes.Unimplemented)
	if _, err := rt.ImageFsInfo(ctx); !errors.Is(err, runtime.ErrUnimplemented) {
		t.Errorf("ImageFsInfo of a runtime without it = %v, want ErrUnimplemented", err)
	}
	srv.FailNext("RemoveImage", codes.FailedPrecondition)
	if err := rt.RemoveImage(ctx, "registry.k8s.io/pause:3.10"); !errors.Is(err, runtime.ErrFailedPrecondition) {
		t.Errorf("refused RemoveImage = %v, want ErrFailedPrecondition", err)
	}
}
