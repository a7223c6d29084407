package imagegc_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/agent/imagegc"
	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
)

// ownImages shows image GC only the test's images, so that the shared
// containerd's other images (other tests') are never its business.
type ownImages struct {
	*cri.Runtime
	prefix string
}

func (o ownImages) ListImages(ctx context.Context) ([]runtime.Image, error) {
	all, err := o.Runtime.ListImages(ctx)
	var mine []runtime.Image
	for _, img := range all {
		if slices.ContainsFunc(img.RepoTags, func(t string) bool { return strings.HasPrefix(t, o.prefix) }) {
			mine = append(mine, img)
		}
	}
	return mine, err
}

// ociArchive packs a one-layer OCI image named name: the binary at /pause
// (its entrypoint) and filler random bytes at /filler.
func ociArchive(t *testing.T, name string, bin []byte, filler int) []byte {
	t.Helper()
	digest := func(b []byte) string { s := sha256.Sum256(b); return "sha256:" + hex.EncodeToString(s[:]) }
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	fill := make([]byte, filler)
	_, _ = rand.Read(fill)
	for _, f := range []struct {
		name string
		data []byte
	}{{"pause", bin}, {"filler", fill}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o755, Size: int64(len(f.data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write(f.data)
	}
	_ = tw.Close()
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.NoCompression) // fast under -race
	_, _ = zw.Write(raw.Bytes())
	_ = zw.Close()
	layer := gz.Bytes()
	desc := func(mt string, b []byte) map[string]any {
		return map[string]any{"mediaType": mt, "digest": digest(b), "size": len(b)}
	}
	config, _ := json.Marshal(map[string]any{
		"architecture": goruntime.GOARCH, "os": "linux",
		"config": map[string]any{"Entrypoint": []string{"/pause"}, "WorkingDir": "/", "Env": []string{"PATH=/"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{digest(raw.Bytes())}},
	})
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": desc("application/vnd.oci.image.config.v1+json", config),
		"layers": []any{desc("application/vnd.oci.image.layer.v1.tar+gzip", layer)},
	})
	md := desc("application/vnd.oci.image.manifest.v1+json", manifest)
	md["annotations"] = map[string]string{"io.containerd.image.name": name, "org.opencontainers.image.ref.name": name[strings.LastIndex(name, ":")+1:]}
	md["platform"] = map[string]string{"architecture": goruntime.GOARCH, "os": "linux"}
	index, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []any{md}})
	var out bytes.Buffer
	ow := tar.NewWriter(&out)
	add := func(n string, b []byte) {
		_ = ow.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg})
		_, _ = ow.Write(b)
	}
	add("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	add("index.json", index)
	for _, b := range [][]byte{layer, config, manifest} {
		add("blobs/sha256/"+strings.TrimPrefix(digest(b), "sha256:"), b)
	}
	_ = ow.Close()
	return out.Bytes()
}

// TestGarbageCollectionOnContainerd runs image GC on a real containerd
// (scripts/containerd/start.sh; skipped without PODLIFE_CRI_ENDPOINT),
// over four tiny images of the test's own making, one used by a running
// container, on an image file system whose usage is supplied (90 % of a
// capacity made for the test): unused images are removed down to the low
// threshold, the used one is kept; DeleteUnusedImages then removes the
// other unused ones. The default stats (ImageFsInfo and statfs of its
// mount point) are read from containerd too.
func TestGarbageCollectionOnContainerd(t *testing.T) {
	endpoint := os.Getenv("PODLIFE_CRI_ENDPOINT")
	if endpoint == "" {
		t.Skip("PODLIFE_CRI_ENDPOINT is not set: start a containerd with `sock=$(bash scripts/containerd/start.sh)`")
	}
	sock := strings.TrimPrefix(endpoint, "unix://")
	dir := filepath.Dir(sock)
	ctrPath, err := os.ReadFile(filepath.Join(dir, "ctr.path"))
	if err != nil {
		t.Skipf("not a containerd of scripts/containerd/start.sh (no ctr.path beside %s): %v", sock, err)
	}
	bin, err := os.ReadFile(filepath.Join(dir, "build", "pause"))
	if err != nil {
		t.Skipf("no pause binary of scripts/containerd/start.sh: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rt, err := cri.New(cri.Options{Endpoint: endpoint, Timeout: 30 * time.Second, CgroupParent: "/podlife-test",
		Logger: testr.New(t), VolumeRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })

	b := make([]byte, 6)
	_, _ = rand.Read(b)
	suffix := hex.EncodeToString(b)
	prefix := "localhost/podlife-imagegc-test/" + suffix + "-"
	names := []string{prefix + "used:1", prefix + "a:1", prefix + "b:1", prefix + "c:1"}
	fillers := []int{1 << 20, 256 << 10, 256 << 10, 256 << 10}
	work := t.TempDir()
	for i, n := range names {
		path := filepath.Join(work, "img.tar")
		if err := os.WriteFile(path, ociArchive(t, n, bin, fillers[i]), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.CommandContext(ctx, strings.TrimSpace(string(ctrPath)), "--address", sock, "-n", "k8s.io", "images", "import", path).CombinedOutput()
		if err != nil {
			t.Fatalf("ctr images import %s: %v\n%s", n, err, out)
		}
	}
	own := ownImages{Runtime: rt, prefix: prefix}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		imgs, _ := own.ListImages(ctx)
		for _, img := range imgs {
			_ = rt.RemoveImage(ctx, img.ID)
		}
	})

	grace := int64(1)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "imagegc-" + suffix, Namespace: "podlife-test", UID: types.UID("imagegc-" + suffix)},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "c", Image: names[0], ImagePullPolicy: v1.PullNever}}},
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := rt.KillPod(ctx, pod, nil, &grace); err != nil {
			t.Errorf("KillPod: %v", err)
		}
		if pods, err := rt.GetPods(ctx, true); err == nil {
			for _, p := range pods {
				if p.ID == pod.UID {
					_ = rt.RemovePod(ctx, p)
				}
			}
		}
	})
	if err := rt.SyncPod(ctx, pod, nil); err != nil {
		t.Fatalf("SyncPod: %v", err)
	}

	imgs, err := own.ListImages(ctx)
	if err != nil || len(imgs) != 4 {
		t.Fatalf("the test's images on containerd: %+v, %v; want 4", imgs, err)
	}
	var total, usedID = uint64(0), ""
	for _, img := range imgs {
		total += uint64(img.Size)
		if slices.Contains(img.RepoTags, names[0]) {
			usedID = img.ID
		}
		t.Logf("image %s %v: %d bytes", img.ID, img.RepoTags, img.Size)
	}
	// The supplied usage: the test's images fill 90 % of the capacity.
	capacity := total * 100 / 90
	stats := func(ctx context.Context) (imagegc.FsStats, error) {
		imgs, err := own.ListImages(ctx)
		if err != nil {
			return imagegc.FsStats{}, err
		}
		var used uint64
		for _, img := range imgs {
			used += uint64(img.Size)
		}
		return imagegc.FsStats{Mountpoint: "test", CapacityBytes: capacity, AvailableBytes: capacity - min(used, capacity), UsedBytes: used}, nil
	}
	m, err := imagegc.New(imagegc.Options{Runtime: own, Stats: stats, MinAge: -1, Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.GarbageCollect(ctx); err != nil {
		t.Fatalf("GarbageCollect: %v", err)
	}
	st, _ := stats(ctx)
	left, _ := own.ListImages(ctx)
	usage := 100 - st.AvailableBytes*100/st.CapacityBytes
	if usage > 80 {
		t.Errorf("usage after GarbageCollect %d %%, want at most the low threshold (80 %%)", usage)
	}
	if len(left) != 3 {
		t.Errorf("%d of the test's images left, want 3 (one unused image was enough to reach 80 %%)", len(left))
	}
	if !slices.ContainsFunc(left, func(i runtime.Image) bool { return i.ID == usedID }) {
		t.Fatal("the image of the running container was removed")
	}
	freed, err := m.DeleteUnusedImages(ctx)
	left, _ = own.ListImages(ctx)
	if err != nil || freed <= 0 || len(left) != 1 || left[0].ID != usedID {
		t.Errorf("DeleteUnusedImages = %d, %v; left %+v; want only the used image", freed, err, left)
	}

	// containerd pins its sandbox image (pinned_images.sandbox): image GC
	// never takes it.
	if env, err := os.ReadFile(filepath.Join(dir, "env")); err == nil {
		for _, l := range strings.Split(string(env), "\n") {
			pause, ok := strings.CutPrefix(l, "CRI_PAUSE_IMAGE=")
			if !ok {
				continue
			}
			all, err := rt.ListImages(ctx)
			i := slices.IndexFunc(all, func(i runtime.Image) bool { return slices.Contains(i.RepoTags, pause) })
			if err != nil || i < 0 || !all[i].Pinned {
				t.Errorf("the sandbox image %s on containerd: %v (found: %v), want it pinned", pause, err, i >= 0)
			}
		}
	}

	// The default stats, from containerd: its image file system's mount
	// point, statfs'ed.
	fs, err := imagegc.CRIStats(rt)(ctx)
	if err != nil || fs.Mountpoint == "" || fs.CapacityBytes == 0 || fs.AvailableBytes > fs.CapacityBytes {
		t.Errorf("CRIStats on containerd = %+v, %v", fs, err)
	}
	t.Logf("containerd's image file system: %+v", fs)
}
