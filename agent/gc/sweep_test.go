package gc_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/podlife/podlife/agent/gc"
)

// mkdirs makes root/UID/sub folders with a file in each.
func mkdirs(t *testing.T, root string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		d := filepath.Join(root, p)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// The sweep removes the folders of pods nobody knows, and keeps those of
// pods the workers know, the runtime still has, or whose names begin
// with a dot; until the sources are ready it removes none.
func TestSweepOrphanedPodFolders(t *testing.T) {
	w := newWorld(t)
	vols := t.TempDir()
	mkdirs(t, w.root, "orphan/logs/c", "known/logs/c", "inruntime/logs/c", ".podlife-removed/x")
	mkdirs(t, vols, "orphan2/volumes/kubernetes.io~secret/s")
	if err := os.WriteFile(filepath.Join(w.root, "afile"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Outside the folder, reached through a symbolic link: never followed.
	outside := t.TempDir()
	mkdirs(t, outside, "keep")
	if err := os.Symlink(outside, filepath.Join(w.root, "orphan", "link")); err != nil {
		t.Fatal(err)
	}
	w.pods.set("known", running)
	w.container(w.sandbox("inruntime", 0), "inruntime", "c", 0, true)
	ready := false
	m := newManager(t, w, func(o *gc.Options) {
		o.PodFolderRoots = []string{w.root, vols, filepath.Join(t.TempDir(), "missing")}
		o.SourcesReady = func() bool { return ready }
	})
	if res := collect(t, w, m); res.PodFolders != 0 || !exists(filepath.Join(w.root, "orphan")) {
		t.Fatalf("swept before the sources were ready: %+v", res)
	}
	ready = true
	res := collect(t, w, m)
	if res.PodFolders != 2 || res.Failed != 0 {
		t.Fatalf("result %+v, want 2 folders removed", res)
	}
	for p, want := range map[string]bool{
		filepath.Join(w.root, "orphan"):           false,
		filepath.Join(vols, "orphan2"):            false,
		filepath.Join(w.root, "known"):            true,
		filepath.Join(w.root, "inruntime"):        true,
		filepath.Join(w.root, ".podlife-removed"): true,
		filepath.Join(w.root, "afile"):            true,
		filepath.Join(outside, "keep", "f"):       true,
	} {
		if exists(p) != want {
			t.Errorf("%s: exists %v, want %v", p, !want, want)
		}
	}
}

// A tmpfs mounted in an orphaned folder (a secret volume of a killed
// agent) is unmounted before the folder goes; the removal never enters a
// mount it could not unmount.
func TestSweepUnmountsTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	w := newWorld(t)
	vols := t.TempDir()
	secret := filepath.Join(vols, "orphan", "volumes", "kubernetes.io~secret", "s")
	mkdirs(t, vols, "orphan/volumes/kubernetes.io~secret/s")
	if err := syscall.Mount("tmpfs", secret, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(secret, syscall.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(secret, "token"), []byte("t"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, w, func(o *gc.Options) { o.PodFolderRoots = []string{vols} })
	if res := collect(t, w, m); res.PodFolders != 1 || res.Failed != 0 {
		t.Fatalf("result %+v, want the folder removed", res)
	}
	if exists(filepath.Join(vols, "orphan")) {
		t.Fatal("the orphaned folder is still there")
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mounts), secret) {
		t.Fatal("the tmpfs is still mounted")
	}
}

// A mount that cannot be unmounted (busy) keeps its folder, and what is
// on it, for a later sweep: the failure is counted, nothing inside the
// mount is removed.
func TestSweepKeepsWhatItCannotUnmount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	w := newWorld(t)
	vols := t.TempDir()
	secret := filepath.Join(vols, "orphan", "volumes", "kubernetes.io~secret", "s")
	mkdirs(t, vols, "orphan/volumes/kubernetes.io~secret/s")
	if err := syscall.Mount("tmpfs", secret, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(secret, syscall.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(secret, "token"), []byte("t"), 0o600); err != nil {
		t.Fatal(err)
	}
	// An open folder on the tmpfs makes it busy.
	f, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	busy, err := os.Open(filepath.Join(secret, "token"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = busy.Close() }()
	defer func() { _ = f.Close() }()
	m := newManager(t, w, func(o *gc.Options) { o.PodFolderRoots = []string{vols} })
	res := collect(t, w, m)
	if res.PodFolders != 0 || res.Failed != 1 {
		t.Fatalf("result %+v, want 1 failure", res)
	}
	if !exists(filepath.Join(secret, "token")) {
		t.Fatal("a file on a mount that could not be unmounted was removed")
	}
	_ = busy.Close()
	_ = f.Close()
	if res := collect(t, w, m); res.PodFolders != 1 || exists(filepath.Join(vols, "orphan")) {
		t.Fatalf("once no longer busy: %+v", res)
	}
}

// Two agents on one root (the default roots of two agents on a machine,
// or many agents in one process): a folder one does not know may be the
// other's live pod, so neither sweeps while both run; once one has
// stopped, the other sweeps.
func TestSweepSkipsASharedRoot(t *testing.T) {
	w1, w2 := newWorld(t), newWorld(t)
	shared := t.TempDir()
	mkdirs(t, shared, "pod-of-agent-2/logs/c")
	a1 := newManager(t, w1, func(o *gc.Options) { o.PodFolderRoots = []string{shared} })
	a2 := newManager(t, w2, func(o *gc.Options) { o.PodFolderRoots = []string{shared} })
	w2.pods.set("pod-of-agent-2", running)
	collect(t, w2, a2) // agent 2 uses the root
	if res := collect(t, w1, a1); res.PodFolders != 0 || !exists(filepath.Join(shared, "pod-of-agent-2")) {
		t.Fatalf("agent 1 swept a root agent 2 uses: %+v", res)
	}
	if n := w1.logs.count("used by another agent too"); n != 1 {
		t.Fatalf("%d lines about the shared root, want 1", n)
	}
	collect(t, w1, a1)
	if n := w1.logs.count("used by another agent too"); n != 1 {
		t.Fatalf("%d lines about the shared root after a second pass, want 1", n)
	}
	if err := a2.Close(); err != nil {
		t.Fatal(err)
	}
	if res := collect(t, w1, a1); res.PodFolders != 1 || exists(filepath.Join(shared, "pod-of-agent-2")) {
		t.Fatalf("agent 1 alone on the root: %+v", res)
	}
	if !exists(filepath.Join(shared, ".podlife-gc-users.lock")) {
		t.Fatal("the lock file was swept")
	}
}
