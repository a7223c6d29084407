package cri

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

func requirements(req, lim string) v1.ResourceRequirements {
	var r v1.ResourceRequirements
	if req != "" {
		r.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse(req)}
	}
	if lim != "" {
		r.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse(lim)}
	}
	return r
}

// The kubelet's OOM score adjustments: by QoS class, and for Burstable
// containers from the memory request over the node's memory, within
// [3, 999]; a sidecar gets no more than the smallest regular container.
func TestOOMScoreAdj(t *testing.T) {
	const node = 10 << 30
	always := v1.ContainerRestartPolicyAlways
	guaranteed := v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")},
	}
	pod := func(init []v1.Container, cs ...v1.Container) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{InitContainers: init, Containers: cs}}
	}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		c    func(*v1.Pod) *v1.Container
		mem  int64
		want int64
	}{
		{"BestEffort", pod(nil, v1.Container{}), nil, node, 1000},
		{"Guaranteed", pod(nil, v1.Container{Resources: guaranteed}), nil, node, -997},
		{"Burstable 1Gi of 10Gi", pod(nil, v1.Container{Resources: requirements("1Gi", "")}), nil, node, 900},
		{"Burstable, request from the limit", pod(nil, v1.Container{Resources: requirements("", "2Gi")}), nil, node, 800},
		{"Burstable, no memory request", pod(nil, v1.Container{Resources: requirements("", "")}, v1.Container{Resources: requirements("1Gi", "")}), nil, node, 999},
		{"Burstable, whole node", pod(nil, v1.Container{Resources: requirements("20Gi", "")}), nil, node, 3},
		{"Burstable, node memory unknown", pod(nil, v1.Container{Resources: requirements("1Gi", "")}), nil, 0, 999},
		{"system-node-critical", func() *v1.Pod {
			p := pod(nil, v1.Container{})
			p.Spec.PriorityClassName = "system-node-critical"
			return p
		}(), nil, node, -997},
		{"sidecar below the smallest regular container",
			pod([]v1.Container{{RestartPolicy: &always, Resources: requirements("1Gi", "")}},
				v1.Container{Resources: requirements("3Gi", "")}, v1.Container{Resources: requirements("2Gi", "")}),
			func(p *v1.Pod) *v1.Container { return &p.Spec.InitContainers[0] }, node, 800},
		{"sidecar with more than the regular containers",
			pod([]v1.Container{{RestartPolicy: &always, Resources: requirements("4Gi", "")}}, v1.Container{Resources: requirements("2Gi", "")}),
			func(p *v1.Pod) *v1.Container { return &p.Spec.InitContainers[0] }, node, 600},
		{"init container: as a regular one",
			pod([]v1.Container{{Resources: requirements("1Gi", "")}}, v1.Container{Resources: requirements("2Gi", "")}),
			func(p *v1.Pod) *v1.Container { return &p.Spec.InitContainers[0] }, node, 900},
		{"status QoS class wins", func() *v1.Pod {
			p := pod(nil, v1.Container{Resources: requirements("1Gi", "")})
			p.Status.QOSClass = v1.PodQOSGuaranteed
			return p
		}(), nil, node, -997},
	} {
		c := &tc.pod.Spec.Containers[0]
		if tc.c != nil {
			c = tc.c(tc.pod)
		}
		if got := oomScoreAdj(tc.pod, c, tc.mem); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestReadMemTotal(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	got, err := readMemTotal(write("ok", "MemTotal:       16318412 kB\nMemFree:         1 kB\n"))
	if err != nil || got != 16318412*1024 {
		t.Errorf("MemTotal = %d, %v", got, err)
	}
	for _, bad := range []string{"", "MemFree: 1 kB\n", "MemTotal: x kB\n", "MemTotal: 12\n"} {
		if n, err := readMemTotal(write("bad", bad)); err == nil {
			t.Errorf("%q: %d, want an error", bad, n)
		}
	}
	if _, err := readMemTotal(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file gave no error")
	}
	// New reads it once, through the seam; an explicit capacity wins.
	r, err := New(Options{Endpoint: "unix:///tmp/x.sock", meminfo: write("seam", "MemTotal: 1024 kB\n")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.opts.NodeMemoryCapacity != 1<<20 {
		t.Errorf("NodeMemoryCapacity %d, want 1Mi", r.opts.NodeMemoryCapacity)
	}
	r2, err := New(Options{Endpoint: "unix:///tmp/x.sock", NodeMemoryCapacity: 5, meminfo: filepath.Join(dir, "missing")})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if r2.opts.NodeMemoryCapacity != 5 {
		t.Errorf("NodeMemoryCapacity %d, want 5", r2.opts.NodeMemoryCapacity)
	}
}

// runAsNonRoot is checked against the effective runAsUser, else the
// image's user, with the kubelet's messages.
func TestVerifyRunAsNonRoot(t *testing.T) {
	yes, no := true, false
	root, user := int64(0), int64(1000)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	c := &v1.Container{Name: "c"}
	uid := func(v int64) *runtimeapi.Image { return &runtimeapi.Image{Uid: &runtimeapi.Int64Value{Value: v}} }
	for _, tc := range []struct {
		name string
		sc   v1.SecurityContext
		img  *runtimeapi.Image
		want string // "" = allowed
	}{
		{"not asked", v1.SecurityContext{}, uid(0), ""},
		{"false", v1.SecurityContext{RunAsNonRoot: &no}, uid(0), ""},
		{"runAsUser 1000", v1.SecurityContext{RunAsNonRoot: &yes, RunAsUser: &user}, uid(0), ""},
		{"runAsUser 0", v1.SecurityContext{RunAsNonRoot: &yes, RunAsUser: &root}, uid(1000), "container's runAsUser breaks non-root policy"},
		{"image uid 0", v1.SecurityContext{RunAsNonRoot: &yes}, uid(0), "container has runAsNonRoot and image will run as root"},
		{"image without user", v1.SecurityContext{RunAsNonRoot: &yes}, &runtimeapi.Image{}, "container has runAsNonRoot and image will run as root"},
		{"image unknown", v1.SecurityContext{RunAsNonRoot: &yes}, nil, "container has runAsNonRoot and image will run as root"},
		{"image uid 1000", v1.SecurityContext{RunAsNonRoot: &yes}, uid(1000), ""},
		{"image user name", v1.SecurityContext{RunAsNonRoot: &yes}, &runtimeapi.Image{Username: "nobody"},
			"container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root"},
	} {
		err := verifyRunAsNonRoot(pod, c, &tc.sc, tc.img)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.Is(err, runtime.ErrFailedPrecondition)):
			t.Errorf("%s: %v, want %q (ErrFailedPrecondition)", tc.name, err, tc.want)
		}
	}
}

// The container's fields win over the pod's.
func TestEffectiveSecurityContext(t *testing.T) {
	yes, no := true, false
	u1, u2, g := int64(1), int64(2), int64(3)
	pod := &v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{
		RunAsUser: &u1, RunAsGroup: &g, RunAsNonRoot: &yes,
		SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault},
	}}}
	c := &v1.Container{SecurityContext: &v1.SecurityContext{RunAsUser: &u2, RunAsNonRoot: &no}}
	sc := effectiveSecurityContext(pod, c)
	if *sc.RunAsUser != 2 || *sc.RunAsGroup != 3 || *sc.RunAsNonRoot || sc.SeccompProfile.Type != v1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("effective %+v", sc)
	}
	if c.SecurityContext.RunAsGroup != nil {
		t.Error("the container's security context was changed")
	}
}

// hostPath types are checked as the kubelet checks them, with its
// messages; the ...OrCreate types create what is missing.
func TestCheckHostPath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	typ := func(t v1.HostPathType) *v1.HostPathType { return &t }
	for _, tc := range []struct {
		path string
		typ  *v1.HostPathType
		want string
	}{
		{missing, nil, ""},
		{missing, typ(v1.HostPathUnset), ""},
		{dir, typ(v1.HostPathDirectory), ""},
		{file, typ(v1.HostPathDirectory), "hostPath type check failed: " + file + " is not a directory"},
		{missing, typ(v1.HostPathDirectory), "hostPath type check failed: " + missing + " is not a directory"},
		{file, typ(v1.HostPathFile), ""},
		{dir, typ(v1.HostPathFile), "hostPath type check failed: " + dir + " is not a file"},
		{file, typ(v1.HostPathDirectoryOrCreate), "hostPath type check failed: " + file + " is not a directory"},
		{dir, typ(v1.HostPathFileOrCreate), "hostPath type check failed: " + dir + " is not a file"},
		{file, typ(v1.HostPathSocket), "hostPath type check failed: " + file + " is not a socket file"},
		{file, typ(v1.HostPathCharDev), "hostPath type check failed: " + file + " is not a character device"},
		{"/dev/null", typ(v1.HostPathCharDev), ""},
		{"/dev/null", typ(v1.HostPathBlockDev), "hostPath type check failed: /dev/null is not a block device"},
		{dir, typ("Weird"), "Weird is an invalid volume type"},
	} {
		err := checkHostPath(&v1.HostPathVolumeSource{Path: tc.path, Type: tc.typ})
		if got := errString(err); got != tc.want {
			t.Errorf("%s %v: %q, want %q", tc.path, tc.typ, got, tc.want)
		}
	}
	mkdir := filepath.Join(dir, "made", "deep")
	if err := checkHostPath(&v1.HostPathVolumeSource{Path: mkdir, Type: typ(v1.HostPathDirectoryOrCreate)}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(mkdir); err != nil || !fi.IsDir() {
		t.Errorf("DirectoryOrCreate made %v, %v", fi, err)
	}
	touch := filepath.Join(dir, "touched")
	if err := checkHostPath(&v1.HostPathVolumeSource{Path: touch, Type: typ(v1.HostPathFileOrCreate)}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(touch); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&^0o644 != 0 {
		t.Errorf("FileOrCreate made %v, %v", fi, err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A subPath is made when missing, and may not leave its volume through a
// symbolic link.
func TestSubPath(t *testing.T) {
	vol, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got, err := subPath(vol, "a/b")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(got); err != nil || !fi.IsDir() || got != filepath.Join(vol, "a", "b") {
		t.Errorf("subPath %q: %v, %v", got, fi, err)
	}
	// The folders made have the volume's mode whatever the umask (an
	// emptyDir's 0777 and setgid: "EmptyDir volumes when FSGroup is
	// specified nonexistent volume subPath should have the correct mode
	// and owner using FSGroup"; they were 0755 before).
	if err := os.Chmod(vol, 0o777|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	got, err = subPath(vol, "c/d")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(vol, "c"), got} {
		if fi, err := os.Stat(d); err != nil || fi.Mode() != fs.ModeDir|fs.ModeSetgid|0o777 {
			t.Errorf("%s: %v, %v; want dgrwxrwxrwx", d, fi.Mode(), err)
		}
	}
	if err := os.Symlink("/etc", filepath.Join(vol, "escape")); err != nil {
		t.Fatal(err)
	}
	if p, err := subPath(vol, "escape"); err == nil {
		t.Errorf("a symbolic link out of the volume gave %q", p)
	}
}
