package cri_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
)

// TestRealRuntimeMemoryLimitAndEmptyDir runs, on a real CRI runtime, a pod
// whose init container writes into an emptyDir that its main container
// (64Mi memory limit) mounts too: the file is in the emptyDir's folder
// under VolumeRoot, the main container writes next to it through ExecSync,
// the kernel holds the container to 64Mi (its memory cgroup's limit) with
// the kubelet's OOM score adjustment, the pod's RuntimeDefault seccomp
// profile, its fsGroup and supplemental group, its sysctl and its managed
// /etc/hosts with hostAliases, and RemovePod deletes the folder.
func TestRealRuntimeMemoryLimitAndEmptyDir(t *testing.T) {
	root := t.TempDir()
	const nodeMemory = 8 << 30
	rt := newRealRuntime(t, func(o *cri.Options) { o.VolumeRoot, o.NodeMemoryCapacity = root, nodeMemory })
	image := realImage()
	ctx := realContext(t, 2*time.Minute)

	pod := realPod(image)
	pull := v1.PullIfNotPresent
	mount := []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	pod.Spec.InitContainers = []v1.Container{{Name: "writer", Image: image, Args: []string{"write", "/data/x", "0", "hi"}, ImagePullPolicy: pull, VolumeMounts: mount}}
	pod.Spec.Containers = []v1.Container{{Name: "main", Image: image, ImagePullPolicy: pull, VolumeMounts: mount,
		Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}}}}
	fsGroup := int64(2000)
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: &fsGroup, SupplementalGroups: []int64{3000},
		SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault},
		Sysctls:        []v1.Sysctl{{Name: "kernel/shm_rmid_forced", Value: "1"}}}
	pod.Spec.HostAliases = []v1.HostAlias{{IP: "123.45.67.89", Hostnames: []string{"foo.remote", "bar.remote"}}}
	cleanupPod(t, rt, pod)

	var main *runtime.ContainerStatus
	for main == nil || main.State != runtime.ContainerStateRunning {
		if err := rt.SyncPod(ctx, pod, nil); err != nil {
			t.Fatalf("SyncPod: %v", err)
		}
		st, err := rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		main = st.FindContainerStatusByName("main")
		select {
		case <-ctx.Done():
			t.Fatalf("main never ran; last status %+v", st.ContainerStatuses)
		case <-time.After(100 * time.Millisecond):
		}
	}

	// The init container's file, in the emptyDir's folder on the host.
	dir := filepath.Join(root, string(pod.UID), "volumes", "kubernetes.io~empty-dir", "data")
	if b, err := os.ReadFile(filepath.Join(dir, "x")); err != nil || strings.TrimSpace(string(b)) != "hi" {
		t.Fatalf("file written by the init container: %q, %v", b, err)
	}
	// The main container sees the same folder.
	if out, errOut, code, err := rt.ExecSync(ctx, main.ID.ID, []string{"/pause", "write", "/data/y", "0", "from", "main"}, 10*time.Second); err != nil || code != 0 {
		t.Fatalf("ExecSync write in main: %v, exit %d, %s %s", err, code, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "y")); err != nil || strings.TrimSpace(string(b)) != "from main" {
		t.Fatalf("file written by main: %q, %v", b, err)
	}

	// The memory limit, as the kernel enforces it.
	pid := containerPID(ctx, t, realEndpoint(t), main.ID.ID)
	limit, where := memoryLimit(t, pid)
	t.Logf("main (pid %d): %s = %d", pid, where, limit)
	if limit != 64<<20 {
		t.Errorf("memory limit of main (pid %d) in %s: %d, want %d", pid, where, limit, 64<<20)
	}
	// Burstable: 1000 - 1000*64Mi/8Gi = 993.
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/oom_score_adj", pid)); err != nil || strings.TrimSpace(string(b)) != "993" {
		t.Errorf("oom_score_adj of main: %q, %v, want 993", b, err)
	}

	// The pod's seccomp profile (RuntimeDefault: filter mode 2) and groups.
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		switch k, v, _ := strings.Cut(strings.TrimSpace(line), ":"); k {
		case "Seccomp":
			if strings.TrimSpace(v) != "2" {
				t.Errorf("Seccomp mode of main: %q, want 2 (filter)", v)
			}
		case "Groups":
			if g := strings.Fields(v); !slices.Contains(g, "2000") || !slices.Contains(g, "3000") {
				t.Errorf("groups of main: %q, want 2000 (fsGroup) and 3000", v)
			}
		}
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode()&os.ModeSetgid == 0 {
		t.Errorf("emptyDir with fsGroup: %v, %v", fi, err)
	}

	// The managed /etc/hosts (the pod is on the node's network: the
	// node's file, then the aliases), and the pod's sysctl in its IPC
	// namespace (the node's keeps its own value).
	node, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	wantHosts := "# Kubernetes-managed hosts file (host network).\n" + string(node) + "\n# Entries added by HostAliases.\n123.45.67.89\tfoo.remote\tbar.remote\n"
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/root/etc/hosts", pid)); err != nil || string(b) != wantHosts {
		t.Errorf("/etc/hosts of main: %q, %v; want %q", b, err, wantHosts)
	}
	out, err := exec.CommandContext(ctx, "nsenter", "--ipc=/proc/"+strconv.Itoa(pid)+"/ns/ipc", "cat", "/proc/sys/kernel/shm_rmid_forced").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Errorf("kernel.shm_rmid_forced in main's IPC namespace: %q, %v; want 1", out, err)
	}

	killAndRemove(ctx, t, rt, pod)
	if _, err := os.Stat(filepath.Join(root, string(pod.UID))); !os.IsNotExist(err) {
		t.Errorf("the pod's folder after RemovePod: %v", err)
	}
}

// containerPID asks the runtime (ContainerStatus, verbose) for the pid of a
// container's process.
func containerPID(ctx context.Context, t *testing.T, endpoint, id string) int {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := runtimeapi.NewRuntimeServiceClient(conn).ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		t.Fatalf("ContainerStatus: %v", err)
	}
	var info struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["info"]), &info); err != nil || info.Pid <= 0 {
		t.Fatalf("no pid in the verbose status (%v): %v", err, resp.GetInfo())
	}
	return info.Pid
}

// memoryLimit reads the memory limit of a process's cgroup: memory.max on
// cgroup v2, memory.limit_in_bytes on v1.
func memoryLimit(t *testing.T, pid int) (int64, string) {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var file string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "" && file == "":
			file = filepath.Join("/sys/fs/cgroup", parts[2], "memory.max")
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			file = filepath.Join("/sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes")
		}
	}
	if file == "" {
		t.Fatalf("no memory cgroup for pid %d", pid)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %q", file, b)
	}
	return n, file
}

// TestRealRuntimeRunAsNonRootAndHostPath checks, on a real CRI runtime,
// runAsNonRoot against the image's user as ImageStatus reports it, and a
// hostPath volume (DirectoryOrCreate, with a subPath) written through by
// the container, read-only where the mount says so, and a Localhost
// seccomp profile.
func TestRealRuntimeRunAsNonRootAndHostPath(t *testing.T) {
	realEndpoint(t) // skips before any file is written
	profiles := t.TempDir()
	if err := os.WriteFile(filepath.Join(profiles, "allow.json"), []byte(`{"defaultAction": "SCMP_ACT_ALLOW"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rt := newRealRuntime(t, func(o *cri.Options) { o.SeccompProfileRoot = profiles })
	image := realImage()
	ctx := realContext(t, 2*time.Minute)
	cleanup := func(pod *v1.Pod) { cleanupPod(t, rt, pod) }
	yes := true
	pull := v1.PullIfNotPresent

	// The test image has no user: it runs as root, so runAsNonRoot
	// without a runAsUser is refused, and nothing is created.
	nonRoot := realPod(image)
	nonRoot.Spec.Containers = []v1.Container{{Name: "main", Image: image, ImagePullPolicy: pull,
		SecurityContext: &v1.SecurityContext{RunAsNonRoot: &yes}}}
	cleanup(nonRoot)
	err := rt.SyncPod(ctx, nonRoot, nil)
	if want := "container has runAsNonRoot and image will run as root"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("runAsNonRoot with a root image: %v, want %q", err, want)
	}
	if st, err := rt.GetPodStatus(ctx, nonRoot.UID, nonRoot.Name, nonRoot.Namespace); err != nil || len(st.ContainerStatuses) != 0 {
		t.Errorf("containers of the refused pod: %+v, %v", st, err)
	}

	// hostPath: made by DirectoryOrCreate; the container writes into a
	// subPath of it, and cannot through a read-only mount.
	host := filepath.Join(t.TempDir(), "host")
	dirOrCreate := v1.HostPathDirectoryOrCreate
	user := int64(0)
	pod := realPod(image)
	allow := "allow.json"
	pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: &yes,
		SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: &allow}}
	pod.Spec.Volumes = []v1.Volume{{Name: "h", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: host, Type: &dirOrCreate}}}}
	pod.Spec.Containers = []v1.Container{{Name: "main", Image: image, ImagePullPolicy: pull,
		// The container's runAsNonRoot false overrides the pod's true.
		SecurityContext: &v1.SecurityContext{RunAsNonRoot: new(bool), RunAsUser: &user},
		VolumeMounts: []v1.VolumeMount{
			{Name: "h", MountPath: "/rw", SubPath: "sub"},
			{Name: "h", MountPath: "/ro", ReadOnly: true},
		}}}
	cleanup(pod)
	st := waitSynced(ctx, t, rt, pod, "main")
	main := st.FindContainerStatusByName("main")
	if _, _, code, err := rt.ExecSync(ctx, main.ID.ID, []string{"/pause", "write", "/rw/f", "0", "hello"}, 10*time.Second); err != nil || code != 0 {
		t.Fatalf("write into the hostPath: %v, exit %d", err, code)
	}
	if b, err := os.ReadFile(filepath.Join(host, "sub", "f")); err != nil || strings.TrimSpace(string(b)) != "hello" {
		t.Fatalf("file in the hostPath's subPath: %q, %v", b, err)
	}
	if _, _, code, err := rt.ExecSync(ctx, main.ID.ID, []string{"/pause", "write", "/ro/g", "0", "no"}, 10*time.Second); err == nil && code == 0 {
		t.Error("a write through the read-only mount succeeded")
	}
	if _, err := os.Stat(filepath.Join(host, "g")); err == nil {
		t.Error("a file was written through the read-only mount")
	}
	// The pod's Localhost seccomp profile, from SeccompProfileRoot, is
	// loaded (filter mode 2).
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", containerPID(ctx, t, realEndpoint(t), main.ID.ID)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(status), "\nSeccomp:\t2\n") {
		t.Errorf("main runs without its Localhost seccomp profile:\n%s", status)
	}
}

// waitSynced syncs the pod until the named container runs.
func waitSynced(ctx context.Context, t *testing.T, rt *cri.Runtime, pod *v1.Pod, name string) *runtime.PodStatus {
	t.Helper()
	for {
		if err := rt.SyncPod(ctx, pod, nil); err != nil {
			t.Fatalf("SyncPod: %v", err)
		}
		st, err := rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		if cs := st.FindContainerStatusByName(name); cs != nil && cs.State == runtime.ContainerStateRunning {
			return st
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s never ran; last status %+v", name, st.ContainerStatuses)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestRealRuntimePrivilegedContainer runs a privileged container on a real
// CRI runtime: its sandbox is privileged too (containerd refuses a
// privileged container in a sandbox that is not: "no privileged container
// allowed in sandbox"), and it runs.
func TestRealRuntimePrivilegedContainer(t *testing.T) {
	rt := newRealRuntime(t, nil)
	image := realImage()
	ctx := realContext(t, time.Minute)
	pod := realPod(image)
	yes := true
	pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Privileged: &yes}
	cleanupPod(t, rt, pod)
	for {
		err := rt.SyncPod(ctx, pod, nil)
		st, serr := rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if serr != nil {
			t.Fatal(serr)
		}
		if c := st.FindContainerStatusByName(pod.Spec.Containers[0].Name); c != nil && c.State == runtime.ContainerStateRunning {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("privileged container never ran: last SyncPod error %v, status %+v", err, st.ContainerStatuses)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
