package volume

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

// kubeAPIAccess is the volume the API server's ServiceAccount admission
// adds to every pod.
func kubeAPIAccess() *v1.Volume {
	return &v1.Volume{Name: "kube-api-access-abcde", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		DefaultMode: ptr(int32(0o644)),
		Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{ExpirationSeconds: ptr(int64(3607)), Path: "token"}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}}
}

func TestProjectedServiceAccountVolumeOnTmpfs(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": "CA PEM"}})
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC))
	srv := &tokenServer{clk: clk}
	srv.install(client)
	m, err := New(Options{Root: t.TempDir(), Client: client, Clock: clk, ResyncInterval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- m.Run(runCtx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "Run", func() bool { m.watcher.mu.Lock(); defer m.watcher.mu.Unlock(); return m.watcher.ctx != nil })

	pod := testPod("u1")
	v := kubeAPIAccess()
	pv, err := m.SetUp(ctx, pod, v)
	mem, _ := memoryBacked(filepath.Dir(filepath.Dir(m.opts.Root)))
	if os.Geteuid() != 0 && !mem {
		// Not root, root on disk: the volume is refused rather than
		// written to disk.
		if err == nil {
			t.Fatal("a token volume was written to a disk-backed folder")
		}
		t.Skipf("not root: tmpfs cannot be mounted (%v)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if onTmpfs, err := memoryBacked(pv.HostPath); err != nil || !onTmpfs {
		t.Errorf("projected volume on tmpfs: %v, %v", onTmpfs, err)
	}
	for file, want := range map[string]string{"token": "token-1", "ca.crt": "CA PEM", "namespace": "ns"} {
		if got := readFile(t, filepath.Join(pv.HostPath, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	if r := srv.reqs[0]; r.Spec.BoundObjectRef.UID != "u1" || *r.Spec.ExpirationSeconds != 3607 {
		t.Errorf("token request %+v", r.Spec)
	}

	// At 80 % of its life the resync writes a new token.
	clk.Step(2886 * time.Second)
	waitFor(t, "the refreshed token", func() bool {
		clk.Step(0)
		if readFile(t, filepath.Join(pv.HostPath, "token")) == "token-2" {
			return true
		}
		clk.Step(time.Minute) // the resync ticker
		return false
	})

	// A secret volume too lives on a tmpfs; TearDown unmounts it.
	sec := &v1.Volume{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "none", Optional: ptr(true)}}}
	ps, err := m.SetUp(ctx, pod, sec)
	if err != nil {
		t.Fatal(err)
	}
	if onTmpfs, _ := memoryBacked(ps.HostPath); !onTmpfs {
		t.Error("secret volume not on tmpfs")
	}
	if err := m.TearDown("u1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ps.HostPath); !os.IsNotExist(err) {
		t.Errorf("secret volume left after TearDown: %v", err)
	}
}
