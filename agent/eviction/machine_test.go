package eviction

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func TestMachineReadsThisMachine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Machine reads Linux's procfs")
	}
	m := &Machine{RootDir: t.TempDir()}
	ns, err := m.NodeStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	obs, bad := observe(ns)
	if len(bad) != 0 {
		t.Fatalf("nonsense stats of this machine: %v", bad)
	}
	for _, s := range []Signal{SignalMemoryAvailable, SignalNodeFsAvailable, SignalImageFsAvailable, SignalPIDAvailable} {
		if _, ok := obs[s]; !ok {
			t.Errorf("%s not observed", s)
		}
	}
	if d, err := m.HasDedicatedImageFs(context.Background()); err != nil || d {
		t.Fatalf("HasDedicatedImageFs = %v, %v; want false (same folder)", d, err)
	}
}

func TestMachineMemInfo(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Machine reads Linux's procfs")
	}
	proc := t.TempDir()
	write := func(name, s string) {
		p := filepath.Join(proc, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("meminfo", "MemTotal:       1000 kB\nMemFree:         100 kB\nMemAvailable:    500 kB\nInactive(file):  200 kB\n")
	write("sys/kernel/pid_max", "4194304\n")
	write("sys/kernel/threads-max", "1000\n")
	m := &Machine{ProcDir: proc, RootDir: t.TempDir()}
	ns, err := m.NodeStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := *ns.Memory.AvailableBytes; got != 300*1024 {
		t.Errorf("available %d, want MemFree + Inactive(file) = %d", got, 300*1024)
	}
	if got := *ns.Memory.WorkingSetBytes; got != 700*1024 {
		t.Errorf("working set %d, want %d", got, 700*1024)
	}
	if got := *ns.Rlimit.MaxPID; got != 1000 {
		t.Errorf("max PID %d, want threads-max 1000", got)
	}
	write("meminfo", "MemTotal: lots\n")
	ns, err = m.NodeStats(context.Background())
	if err != nil || ns.Memory != nil {
		t.Fatalf("bad meminfo: %+v, %v; want no memory figures and no error", ns.Memory, err)
	}
}

func TestLocalStorageMeasuresEmptyDirsAndLogs(t *testing.T) {
	dir := t.TempDir()
	pod := filepath.Join(dir, "uid-a")
	for _, d := range []string{"volumes/kubernetes.io~empty-dir/scratch", "logs/c"} {
		if err := os.MkdirAll(filepath.Join(pod, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = 1
	}
	if err := os.WriteFile(filepath.Join(pod, "volumes/kubernetes.io~empty-dir/scratch/f"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pod, "logs/c/0.log"), big[:4096], 0o644); err != nil {
		t.Fatal(err)
	}
	l := &LocalStorage{PodsDir: dir, Stats: podStatsList{
		{PodRef: statsapi.PodReference{UID: "uid-a"}, Containers: []statsapi.ContainerStats{{Name: "c"}}},
		{PodRef: statsapi.PodReference{UID: "../escape"}},
		{PodRef: statsapi.PodReference{UID: "uid-none"}},
	}}
	list, err := l.ListPodStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	a := list[0]
	if len(a.VolumeStats) != 1 || a.VolumeStats[0].Name != "scratch" || *a.VolumeStats[0].UsedBytes < 1<<20 {
		t.Fatalf("volume stats %+v", a.VolumeStats)
	}
	if a.Containers[0].Logs == nil || *a.Containers[0].Logs.UsedBytes < 4096 {
		t.Fatalf("logs %+v", a.Containers[0].Logs)
	}
	if got := *a.EphemeralStorage.UsedBytes; got < 1<<20+4096 {
		t.Fatalf("ephemeral storage %d", got)
	}
	if list[1].EphemeralStorage != nil || list[2].EphemeralStorage != nil {
		t.Fatal("stats for pods without a folder")
	}
}

type podStatsList []statsapi.PodStats

func (l podStatsList) ListPodStats(context.Context) ([]statsapi.PodStats, error) {
	return append([]statsapi.PodStats(nil), l...), nil
}

// The image file system is where ImageFsMountpoint says, once it names a
// folder here; until then ImageFsDir, asking again at each call.
func TestMachineImageFsFromTheRuntime(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Machine reads Linux's procfs")
	}
	root := t.TempDir()
	other := "/dev/shm" // a tmpfs: another file system than the temp folder's
	if a, errA := deviceOf(root); errA != nil {
		t.Fatal(errA)
	} else if b, errB := deviceOf(other); errB != nil || a == b {
		t.Skipf("no second file system to tell apart (%s: %v)", other, errB)
	}
	var answers []func() (string, error)
	asked := 0
	m := &Machine{RootDir: root, ImageFsMountpoint: func(context.Context) (string, error) {
		a := answers[asked]
		asked++
		return a()
	}}
	ctx := context.Background()
	dedicated := func() bool {
		t.Helper()
		d, err := m.HasDedicatedImageFs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	answers = []func() (string, error){
		func() (string, error) { return "", errors.New("runtime down") },
		func() (string, error) { return "", nil },
		func() (string, error) { return filepath.Join(root, "not-here"), nil },
		func() (string, error) { return other, nil },
	}
	for i := range 3 {
		if dedicated() {
			t.Fatalf("answer %d (no folder here): a dedicated image file system", i)
		}
	}
	if !dedicated() || asked != 4 {
		t.Fatalf("answer %s: dedicated %v after %d answers; want true after 4", other, dedicated(), asked)
	}
	ns, err := m.NodeStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if asked != 4 {
		t.Fatalf("asked %d times; the answer, once a folder, is kept (want 4)", asked)
	}
	want, err := statFs(other)
	if err != nil {
		t.Fatal(err)
	}
	if got := ns.Runtime.ImageFs; got == nil || *got.CapacityBytes != *want.CapacityBytes || *got.Inodes != *want.Inodes {
		t.Fatalf("image fs stats %+v, want those of %s (capacity %d, inodes %d)", got, other, *want.CapacityBytes, *want.Inodes)
	}
}
