package volume

import (
	"context"
	"os"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes/fake"
)

// A memory emptyDir is a tmpfs of the kubelet's size: its sizeLimit here
// (the e2e spec "EmptyDir volumes pod should support memory backed volumes
// of specified size" reads 10240 KiB from df for 10Mi); a second SetUp
// keeps the mount; TearDown unmounts it.
func TestMemoryEmptyDirSized(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: tmpfs cannot be mounted")
	}
	m := startManager(t, fake.NewClientset())
	pod := testPod("u1")
	limit := resource.MustParse("10Mi")
	v := &v1.Volume{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &limit}}}
	ctx := context.Background()
	t.Cleanup(func() { _ = m.TearDown(pod.UID) }) // unmounts after a failure too
	for range 2 {
		pv, err := m.SetUp(ctx, pod, v)
		if err != nil {
			t.Fatal(err)
		}
		var st syscall.Statfs_t
		if err := syscall.Statfs(pv.HostPath, &st); err != nil {
			t.Fatal(err)
		}
		if st.Type != tmpfsMagic || int64(st.Blocks)*st.Bsize != 10<<20 {
			t.Fatalf("memory emptyDir: file system %#x of %d bytes, want a tmpfs of %d", st.Type, int64(st.Blocks)*st.Bsize, 10<<20)
		}
		if mounted, err := isMountPoint(pv.HostPath); err != nil || !mounted {
			t.Fatalf("not a mount point: %v, %v", mounted, err)
		}
		// As the kubelet's tmpfs root (the e2e spec "nonexistent volume
		// subPath should have the correct mode and owner using FSGroup"
		// sees dgtrwxrwxrwx on a subPath folder made with its bits).
		if fi, err := os.Stat(pv.HostPath); err != nil || fi.Mode() != os.ModeDir|os.ModeSticky|0o777 {
			t.Fatalf("mode %v (%v), want dtrwxrwxrwx", fi.Mode(), err)
		}
	}
	dir, _ := m.dir(pod.UID, v)
	if err := m.TearDown(pod.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("volume left after TearDown: %v", err)
	}
}

func TestMemorySize(t *testing.T) {
	q := resource.MustParse
	always := v1.ContainerRestartPolicyAlways
	withLimit := func(n string) v1.Container {
		return v1.Container{Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: q(n)}}}
	}
	sidecar := withLimit("100Mi")
	sidecar.RestartPolicy = &always
	emptyDir := func(limit string) *v1.Volume {
		ed := &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}
		if limit != "" {
			l := q(limit)
			ed.SizeLimit = &l
		}
		return &v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{EmptyDir: ed}}
	}
	secret := &v1.Volume{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "x"}}}
	pod := func(init []v1.Container, cs ...v1.Container) *v1.Pod {
		p := testPod("u")
		p.Spec.InitContainers, p.Spec.Containers = init, cs
		return p
	}
	const mi = 1 << 20
	for _, tc := range []struct {
		name        string
		allocatable string
		pod         *v1.Pod
		v           *v1.Volume
		want        int64
	}{
		{"nothing known", "", pod(nil, v1.Container{}), emptyDir(""), 0},
		{"sizeLimit alone", "", pod(nil, v1.Container{}), emptyDir("10Mi"), 10 * mi},
		{"allocatable", "4Gi", pod(nil, v1.Container{}), emptyDir(""), 4096 * mi},
		{"sizeLimit under allocatable", "4Gi", pod(nil, v1.Container{}), emptyDir("10Mi"), 10 * mi},
		{"sizeLimit over allocatable", "1Gi", pod(nil, v1.Container{}), emptyDir("2Gi"), 1024 * mi},
		{"pod limit under allocatable", "4Gi", pod(nil, withLimit("200Mi"), withLimit("300Mi")), emptyDir(""), 500 * mi},
		{"a container without limit: no pod limit", "4Gi", pod(nil, withLimit("200Mi"), v1.Container{}), emptyDir(""), 4096 * mi},
		{"sidecars add, init containers take the largest", "4Gi", pod([]v1.Container{sidecar, withLimit("1Gi")}, withLimit("200Mi")), emptyDir(""), 1124 * mi},
		{"sizeLimit under the pod limit", "4Gi", pod(nil, withLimit("200Mi")), emptyDir("10Mi"), 10 * mi},
		{"a secret: no sizeLimit", "4Gi", pod(nil, withLimit("200Mi")), secret, 200 * mi},
	} {
		m := &Manager{}
		if tc.allocatable != "" {
			m.opts.Allocatable = func() v1.ResourceList { return v1.ResourceList{v1.ResourceMemory: q(tc.allocatable)} }
		}
		if got := m.memorySize(tc.pod, tc.v); got != tc.want {
			t.Errorf("%s: %d bytes, want %d", tc.name, got, tc.want)
		}
	}
}
