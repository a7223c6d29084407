package volume

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("changing a file's group to any fsGroup needs root")
	}
}

// owner is the uid, gid and mode (with setgid) of p, not following a link.
func owner(t *testing.T, p string) (uid, gid uint32, m fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid, fi.Mode() & (fs.ModePerm | fs.ModeSetgid)
}

func TestOwnershipMode(t *testing.T) {
	g := int64(1234)
	for _, tc := range []struct {
		own  Ownership
		in   fs.FileMode
		want fs.FileMode
	}{
		{Ownership{}, 0o400, 0o400},
		{Ownership{FSGroup: &g, ReadOnly: true}, 0o400, 0o440},
		{Ownership{FSGroup: &g, ReadOnly: true}, 0o644, 0o644},
		{Ownership{FSGroup: &g, ReadOnly: true}, 0o600, 0o640},
		{Ownership{FSGroup: &g, ReadOnly: true}, fs.ModeDir | 0o755, fs.ModeDir | fs.ModeSetgid | 0o755},
		{Ownership{FSGroup: &g, ReadOnly: true}, fs.ModeDir | 0o700, fs.ModeDir | fs.ModeSetgid | 0o750},
		{Ownership{FSGroup: &g}, 0o400, 0o660},
		{Ownership{FSGroup: &g}, fs.ModeDir | 0o700, fs.ModeDir | fs.ModeSetgid | 0o770},
		{Ownership{FSGroup: &g}, fs.ModeSymlink | 0o777, fs.ModeSymlink | 0o777},
	} {
		if got := tc.own.Mode(tc.in); got != tc.want {
			t.Errorf("%+v.Mode(%v) = %v, want %v", tc.own, tc.in, got, tc.want)
		}
	}
}

// The kubelet's SetVolumeOwnership of a read-only volume: every file and
// folder of group fsGroup, r--r----- added to files, r-xr-x--- and setgid
// to folders, links untouched; a rewrite of the same payload changes
// nothing, a changed one keeps the ownership.
func TestWriteAtomicOwned(t *testing.T) {
	needRoot(t)
	dir := filepath.Join(t.TempDir(), "vol")
	g := int64(1234)
	own := Ownership{FSGroup: &g, ReadOnly: true}
	now := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	payload := map[string]File{
		"data-1":    {Data: []byte("value-1\n"), Mode: 0o400},
		"data-2":    {Data: []byte("value-2\n"), Mode: 0o644},
		"sub/dir/b": {Data: []byte("b"), Mode: 0o600},
	}
	changed, err := WriteAtomicOwned(dir, payload, now, own)
	if err != nil || !changed {
		t.Fatalf("first write: %v, %v", changed, err)
	}
	for p, want := range map[string]fs.FileMode{
		"":                 fs.ModeSetgid | 0o755,
		"..data/":          fs.ModeSetgid | 0o755,
		"..data/data-1":    0o440,
		"..data/data-2":    0o644,
		"..data/sub":       fs.ModeSetgid | 0o755,
		"..data/sub/dir":   fs.ModeSetgid | 0o755,
		"..data/sub/dir/b": 0o640,
	} {
		full := filepath.Join(dir, p)
		if p == "..data/" {
			full, _ = filepath.EvalSymlinks(filepath.Join(dir, "..data"))
		}
		_, gid, m := owner(t, full)
		if gid != 1234 || m != want {
			t.Errorf("%s: group %d mode %v, want 1234 %v", p, gid, m, want)
		}
	}
	if changed, err := WriteAtomicOwned(dir, payload, now.Add(time.Second), own); err != nil || changed {
		t.Errorf("same payload rewritten: %v, %v", changed, err)
	}
	payload["data-1"] = File{Data: []byte("value-2\n"), Mode: 0o400}
	if changed, err := WriteAtomicOwned(dir, payload, now.Add(2*time.Second), own); err != nil || !changed {
		t.Fatalf("update: %v, %v", changed, err)
	}
	if _, gid, m := owner(t, filepath.Join(dir, "..data", "data-1")); gid != 1234 || m != 0o440 {
		t.Errorf("updated data-1: group %d mode %v", gid, m)
	}
	// Without an fsGroup the modes are the payload's.
	plain := filepath.Join(t.TempDir(), "plain")
	if _, err := WriteAtomic(plain, map[string]File{"a": {Data: []byte("a"), Mode: 0o400}}, now); err != nil {
		t.Fatal(err)
	}
	if _, gid, m := owner(t, filepath.Join(plain, "..data", "a")); gid != 0 || m != 0o400 {
		t.Errorf("no fsGroup: group %d mode %v", gid, m)
	}
}

// "should be consumable from pods in volume as non-root with defaultMode
// and fsGroup set": a secret volume of defaultMode 0440 in a pod with
// fsGroup 1001 and runAsUser 1000 has its files r--r----- of group 1001
// (before, root's group: user 1000 could not read them); a memory
// emptyDir gets the group and the setgid bit; a projected token is 0640,
// owned by the pods' single user.
func TestManagerSetsFSGroupOwnership(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	client := fake.NewClientset(
		&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"data-1": []byte("value-1\n")}},
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": "CA"}},
	)
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC))
	srv := &tokenServer{clk: clk}
	srv.install(client)
	m, err := New(Options{Root: t.TempDir(), Client: client, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- m.Run(runCtx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "Run", func() bool { m.watcher.mu.Lock(); defer m.watcher.mu.Unlock(); return m.watcher.ctx != nil })

	pod := testPod("u1")
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr(int64(1001)), RunAsUser: ptr(int64(1000))}
	pod.Spec.Containers = []v1.Container{{Name: "c"}}
	sec := &v1.Volume{Name: "secret-volume", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr(int32(0o440))}}}
	pv, err := m.SetUp(ctx, pod, sec)
	if err != nil {
		t.Fatal(err)
	}
	if uid, gid, mode := owner(t, filepath.Join(pv.HostPath, "..data", "data-1")); uid != 0 || gid != 1001 || mode != 0o440 {
		t.Errorf("data-1: %d:%d %v, want 0:1001 -r--r-----", uid, gid, mode)
	}
	if _, gid, mode := owner(t, pv.HostPath); gid != 1001 || mode != fs.ModeSetgid|0o755 {
		t.Errorf("volume folder: group %d %v", gid, mode)
	}

	ed := &v1.Volume{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}}
	pe, err := m.SetUp(ctx, pod, ed)
	if err != nil {
		t.Fatal(err)
	}
	if _, gid, mode := owner(t, pe.HostPath); gid != 1001 || mode != fs.ModeSetgid|0o777 {
		t.Errorf("memory emptyDir: group %d %v, want 1001 %v", gid, mode, fs.ModeSetgid|0o777)
	}

	pt, err := m.SetUp(ctx, pod, kubeAPIAccess())
	if err != nil {
		t.Fatal(err)
	}
	if uid, gid, mode := owner(t, filepath.Join(pt.HostPath, "..data", "token")); uid != 1000 || gid != 1001 || mode != 0o640 {
		t.Errorf("token: %d:%d %v, want 1000:1001 -rw-r-----", uid, gid, mode)
	}
	if uid, gid, mode := owner(t, filepath.Join(pt.HostPath, "..data", "ca.crt")); uid != 0 || gid != 1001 || mode != 0o644 {
		t.Errorf("ca.crt: %d:%d %v, want 0:1001 -rw-r--r--", uid, gid, mode)
	}
	if err := m.TearDown("u1"); err != nil {
		t.Fatal(err)
	}
}

func TestFsUser(t *testing.T) {
	u := func(v int64) *v1.SecurityContext { return &v1.SecurityContext{RunAsUser: &v} }
	pod := func(psc *v1.PodSecurityContext, cs ...v1.Container) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{SecurityContext: psc, Containers: cs}}
	}
	for name, tc := range map[string]struct {
		pod  *v1.Pod
		want int64 // -1: nil
	}{
		"none":           {pod(nil, v1.Container{Name: "a"}), -1},
		"pod's":          {pod(&v1.PodSecurityContext{RunAsUser: ptr(int64(7))}, v1.Container{Name: "a"}, v1.Container{Name: "b"}), 7},
		"same":           {pod(nil, v1.Container{Name: "a", SecurityContext: u(5)}, v1.Container{Name: "b", SecurityContext: u(5)}), 5},
		"differ":         {pod(nil, v1.Container{Name: "a", SecurityContext: u(5)}, v1.Container{Name: "b", SecurityContext: u(6)}), -1},
		"one unset":      {pod(nil, v1.Container{Name: "a", SecurityContext: u(5)}, v1.Container{Name: "b"}), -1},
		"pod's override": {pod(&v1.PodSecurityContext{RunAsUser: ptr(int64(7))}, v1.Container{Name: "a", SecurityContext: u(5)}, v1.Container{Name: "b"}), -1},
	} {
		got := FsUser(tc.pod)
		if (got == nil) != (tc.want == -1) || (got != nil && *got != tc.want) {
			t.Errorf("%s: FsUser = %v, want %d", name, got, tc.want)
		}
	}
}
