package cri_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// configOf returns the CRI config the fake runtime was given for the
// pod's newest instance of a container.
func configOf(t *testing.T, srv *fakecri.Server, rt *cri.Runtime, pod *v1.Pod, name string) *runtimeapi.ContainerConfig {
	t.Helper()
	cs := podStatus(t, rt, pod).FindContainerStatusByName(name)
	if cs == nil {
		t.Fatalf("no container %q", name)
	}
	cfg, err := srv.ContainerConfig(cs.ID.ID)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func sandboxConfigOf(t *testing.T, srv *fakecri.Server, rt *cri.Runtime, pod *v1.Pod) *runtimeapi.PodSandboxConfig {
	t.Helper()
	st := podStatus(t, rt, pod)
	if len(st.SandboxStatuses) == 0 {
		t.Fatal("no sandbox")
	}
	cfg, err := srv.SandboxConfig(st.SandboxStatuses[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Each container's OOM score adjustment follows its pod's QoS class, with
// the node memory of Options.NodeMemoryCapacity.
func TestOOMScoreAdjByQOS(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep, func(o *cri.Options) { o.NodeMemoryCapacity = 8 << 30 })
	mem := func(req, lim string) v1.ResourceRequirements {
		r := v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}
		if req != "" {
			r.Requests[v1.ResourceMemory] = resource.MustParse(req)
		}
		if lim != "" {
			r.Limits[v1.ResourceMemory] = resource.MustParse(lim)
			r.Limits[v1.ResourceCPU] = resource.MustParse("100m")
			r.Requests[v1.ResourceCPU] = resource.MustParse("100m")
		}
		return r
	}
	for _, tc := range []struct {
		name string
		res  v1.ResourceRequirements
		want int64
	}{
		{"besteffort", v1.ResourceRequirements{}, 1000},
		{"guaranteed", mem("64Mi", "64Mi"), -997},
		{"burstable", mem("2Gi", ""), 750},
	} {
		pod := testPod(tc.name, v1.RestartPolicyAlways, v1.Container{Name: "c", Resources: tc.res})
		if err := rt.SyncPod(ctxT(t), pod, nil); err != nil {
			t.Fatal(err)
		}
		if got := configOf(t, srv, rt, pod, "c").GetLinux().GetResources().GetOomScoreAdj(); got != tc.want {
			t.Errorf("%s: oom_score_adj %d, want %d", tc.name, got, tc.want)
		}
	}
}

// runAsNonRoot is checked against the image's user (present or just
// pulled) and the effective runAsUser; a container that would run as root
// is not created, with the kubelet's message in the error and a Failed
// event.
func TestRunAsNonRoot(t *testing.T) {
	_, ep := startFake(t, fakecri.Options{
		Registry: []fakecri.RegistryImage{
			{Refs: []string{"root:1"}, User: "0"},
			{Refs: []string{"nouser:1"}},
			{Refs: []string{"named:1"}, User: "app:app"},
			{Refs: []string{"numeric:1"}, User: "1000:1000"},
		},
		Images: []string{"named:1"},
	})
	rt := newRuntime(t, ep)
	rec := record.NewFakeRecorder(100)
	rt.SetRecorder(rec)
	yes := true
	root, user := int64(0), int64(1000)
	for _, tc := range []struct {
		name, image string
		pod         *v1.PodSecurityContext
		c           *v1.SecurityContext
		want        string
	}{
		{"root", "root:1", nil, &v1.SecurityContext{RunAsNonRoot: &yes}, "container has runAsNonRoot and image will run as root"},
		{"nouser", "nouser:1", &v1.PodSecurityContext{RunAsNonRoot: &yes}, nil, "container has runAsNonRoot and image will run as root"},
		{"named", "named:1", &v1.PodSecurityContext{RunAsNonRoot: &yes}, nil,
			"container has runAsNonRoot and image has non-numeric user (app), cannot verify user is non-root"},
		{"uid0", "numeric:1", nil, &v1.SecurityContext{RunAsNonRoot: &yes, RunAsUser: &root}, "container's runAsUser breaks non-root policy"},
		{"numeric", "numeric:1", nil, &v1.SecurityContext{RunAsNonRoot: &yes}, ""},
		{"pod-user", "root:1", &v1.PodSecurityContext{RunAsUser: &user}, &v1.SecurityContext{RunAsNonRoot: &yes}, ""},
	} {
		pod := testPod(tc.name, v1.RestartPolicyAlways, v1.Container{Name: "c", Image: tc.image, SecurityContext: tc.c})
		pod.Spec.SecurityContext = tc.pod
		err := rt.SyncPod(ctxT(t), pod, nil)
		created := podStatus(t, rt, pod).FindContainerStatusByName("c") != nil
		if tc.want == "" {
			if err != nil || !created {
				t.Errorf("%s: %v (created %v)", tc.name, err, created)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, runtime.ErrFailedPrecondition) || created {
			t.Errorf("%s: %v (created %v), want %q", tc.name, err, created, tc.want)
		}
		if ev := drain(rec); !strings.Contains(ev, "Warning Failed Error: "+tc.want) {
			t.Errorf("%s: no Failed event among\n%s", tc.name, ev)
		}
	}
}

// seccomp: the container's profile, else the pod's, else Unconfined;
// Localhost profiles under SeccompProfileRoot; the sandbox gets the pod's.
// fsGroup and supplementalGroups are supplemental groups of the sandbox
// and of every container.
func TestSeccompAndGroups(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep, func(o *cri.Options) { o.SeccompProfileRoot = "/profiles" })
	prof, fsGroup := "audit.json", int64(2000)
	pod := testPod("sec", v1.RestartPolicyAlways,
		v1.Container{Name: "inherits"},
		v1.Container{Name: "own", SecurityContext: &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}}},
		v1.Container{Name: "unconfined", SecurityContext: &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}}},
	)
	pod.Spec.SecurityContext = &v1.PodSecurityContext{
		FSGroup: &fsGroup, SupplementalGroups: []int64{3000, 3001},
		SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: &prof},
	}
	if err := rt.SyncPod(ctxT(t), pod, nil); err != nil {
		t.Fatal(err)
	}
	localhost := &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/profiles/audit.json"}
	groups := []int64{2000, 3000, 3001}
	sb := sandboxConfigOf(t, srv, rt, pod).GetLinux().GetSecurityContext()
	if d := cmp.Diff(localhost, sb.GetSeccomp(), protocmp.Transform()); d != "" {
		t.Errorf("sandbox seccomp (-want +got):\n%s", d)
	}
	if d := cmp.Diff(groups, sb.GetSupplementalGroups()); d != "" {
		t.Errorf("sandbox groups (-want +got):\n%s", d)
	}
	for name, want := range map[string]*runtimeapi.SecurityProfile{
		"inherits":   localhost,
		"own":        {ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
		"unconfined": {ProfileType: runtimeapi.SecurityProfile_Unconfined},
	} {
		sc := configOf(t, srv, rt, pod, name).GetLinux().GetSecurityContext()
		if d := cmp.Diff(want, sc.GetSeccomp(), protocmp.Transform()); d != "" {
			t.Errorf("%s seccomp (-want +got):\n%s", name, d)
		}
		if d := cmp.Diff(groups, sc.GetSupplementalGroups()); d != "" {
			t.Errorf("%s groups (-want +got):\n%s", name, d)
		}
	}

	// Nothing set: Unconfined, as the kubelet without --seccomp-default.
	plain := testPod("plain", v1.RestartPolicyAlways, v1.Container{Name: "c"})
	if err := rt.SyncPod(ctxT(t), plain, nil); err != nil {
		t.Fatal(err)
	}
	if got := configOf(t, srv, rt, plain, "c").GetLinux().GetSecurityContext().GetSeccomp().GetProfileType(); got != runtimeapi.SecurityProfile_Unconfined {
		t.Errorf("default seccomp %v", got)
	}
	if got := sandboxConfigOf(t, srv, rt, plain).GetLinux().GetSecurityContext().GetSeccomp().GetProfileType(); got != runtimeapi.SecurityProfile_Unconfined {
		t.Errorf("default sandbox seccomp %v", got)
	}

	// Malformed profiles are refused by name.
	escape := "../x.json"
	for field, edit := range map[string]func(*v1.Pod){
		"spec.securityContext.seccompProfile.localhostProfile": func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost}}
		},
		"spec.containers[0].securityContext.seccompProfile.localhostProfile": func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: &escape}}
		},
		"spec.containers[0].securityContext.seccompProfile.type": func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: "Weird"}}
		},
	} {
		p := testPod("bad", v1.RestartPolicyAlways, v1.Container{Name: "c"})
		edit(p)
		if err := rt.SyncPod(ctxT(t), p, nil); !errors.Is(err, runtime.ErrInvalidArgument) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v", field, err)
		}
	}
}

// emptyDir volumes are folders under VolumeRoot/UID, world-writable,
// shared by the containers that mount them, deleted by RemovePod; hostPath
// volumes are checked by type; both are CRI mounts with readOnly, subPath
// and propagation.
func TestEmptyDirAndHostPath(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	root := t.TempDir()
	rt := newRuntime(t, ep, func(o *cri.Options) { o.VolumeRoot = root })
	host := filepath.Join(t.TempDir(), "made")
	dirOrCreate := v1.HostPathDirectoryOrCreate
	h2c := v1.MountPropagationHostToContainer
	pod := testPod("vols", v1.RestartPolicyAlways,
		v1.Container{Name: "writer", VolumeMounts: []v1.VolumeMount{
			{Name: "data", MountPath: "/data"},
			{Name: "host", MountPath: "/host", MountPropagation: &h2c},
			{Name: "kube-api-access-x1y2z", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
		}},
		v1.Container{Name: "reader", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/in", SubPath: "sub/dir", ReadOnly: true}}},
	)
	pod.Spec.Volumes = []v1.Volume{
		{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: host, Type: &dirOrCreate}}},
		serviceAccountVolume(),
	}
	rec := record.NewFakeRecorder(100)
	rt.SetRecorder(rec)
	if err := rt.SyncPod(ctxT(t), pod, nil); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(root, string(pod.UID), "volumes", "kubernetes.io~empty-dir", "data")
	if fi, err := os.Stat(data); err != nil || fi.Mode().Perm() != 0o777 || !fi.IsDir() {
		t.Fatalf("emptyDir folder: %v, %v", fi, err)
	}
	if fi, err := os.Stat(host); err != nil || !fi.IsDir() {
		t.Fatalf("DirectoryOrCreate hostPath: %v, %v", fi, err)
	}
	for name, want := range map[string][]*runtimeapi.Mount{
		"writer": {
			{ContainerPath: "/data", HostPath: data},
			{ContainerPath: "/host", HostPath: host, Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
		},
		"reader": {{ContainerPath: "/in", HostPath: filepath.Join(data, "sub", "dir"), Readonly: true}},
	} {
		// The termination-message file is termination.go's (its own
		// tests), the managed /etc/hosts etchosts.go's: present, then left
		// out of the comparison.
		got := configOf(t, srv, rt, pod, name).GetMounts()
		hosts := filepath.Join(root, string(pod.UID), "etc-hosts")
		if !slices.ContainsFunc(got, func(m *runtimeapi.Mount) bool {
			return m.GetContainerPath() == "/etc/hosts" && m.GetHostPath() == hosts && !m.GetReadonly()
		}) {
			t.Errorf("%s: no managed /etc/hosts among %v", name, got)
		}
		got = slices.DeleteFunc(got, func(m *runtimeapi.Mount) bool {
			return m.GetContainerPath() == v1.TerminationMessagePathDefault || m.GetContainerPath() == "/etc/hosts"
		})
		if d := cmp.Diff(want, got, protocmp.Transform()); d != "" {
			t.Errorf("%s mounts (-want +got):\n%s", name, d)
		}
	}
	if ev := drain(rec); !strings.Contains(ev, "spec.volumes[2] (kube-api-access-x1y2z).projected: the service-account token is not mounted") {
		t.Errorf("the service-account volume is not reported among\n%s", ev)
	}
	if err := os.WriteFile(filepath.Join(data, "x"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}

	// Kept while the pod exists, removed with it.
	zero := int64(0)
	if err := rt.KillPod(ctxT(t), pod, nil, &zero); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(data); err != nil {
		t.Fatalf("emptyDir gone after KillPod: %v", err)
	}
	if err := rt.RemovePod(ctxT(t), &runtime.Pod{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, string(pod.UID))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pod folder after RemovePod: %v", err)
	}
	if _, err := os.Stat(host); err != nil {
		t.Errorf("hostPath removed with the pod: %v", err)
	}
}

// With fsGroup an emptyDir belongs to that group, setgid.
func TestEmptyDirFSGroup(t *testing.T) {
	_, ep := startFake(t, fakecri.Options{})
	root := t.TempDir()
	rt := newRuntime(t, ep, func(o *cri.Options) { o.VolumeRoot = root })
	gid := int64(os.Getgid())
	pod := testPod("fsg", v1.RestartPolicyAlways, v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "d", MountPath: "/d"}}})
	pod.Spec.Volumes = []v1.Volume{{Name: "d", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: &gid}
	if err := rt.SyncPod(ctxT(t), pod, nil); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(root, string(pod.UID), "volumes", "kubernetes.io~empty-dir", "d"))
	if err != nil || fi.Mode()&os.ModeSetgid == 0 || fi.Mode().Perm() != 0o777 {
		t.Fatalf("emptyDir with fsGroup: %v, %v", fi, err)
	}
}

func serviceAccountVolume() v1.Volume {
	return v1.Volume{Name: "kube-api-access-x1y2z", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
		{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
		{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
		{DownwardAPI: &v1.DownwardAPIProjection{}},
	}}}}
}

// A volume the adapter cannot mount refuses the pod when a container mounts
// it, naming the field; declared but unmounted, it is only reported. Mount
// features it cannot honour are refused; a hostPath of the wrong type
// fails the container's start with the kubelet's message.
func TestUnsupportedVolumes(t *testing.T) {
	_, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep, func(o *cri.Options) { o.VolumeRoot = t.TempDir() })
	mount := []v1.VolumeMount{{Name: "v", MountPath: "/v"}}
	for _, tc := range []struct {
		name   string
		source v1.VolumeSource
		mounts []v1.VolumeMount
		want   string
	}{
		{"configmap", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}, mount, "spec.volumes[0] (v).configMap: not supported"},
		{"secret", v1.VolumeSource{Secret: &v1.SecretVolumeSource{}}, mount, "spec.volumes[0] (v).secret: not supported"},
		{"pvc", v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}, mount, "spec.volumes[0] (v).persistentVolumeClaim"},
		{"downward", v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{}}, mount, "spec.volumes[0] (v).downwardAPI"},
		{"projected", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}, mount, "spec.volumes[0] (v).projected"},
		{"memory", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}, mount, "spec.volumes[0] (v).emptyDir.medium"},
		{"nosuch", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}, []v1.VolumeMount{{Name: "w", MountPath: "/w"}}, "spec.containers[0].volumeMounts[0] (w).name"},
		{"expr", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}, []v1.VolumeMount{{Name: "v", MountPath: "/v", SubPath: "x", SubPathExpr: "$(POD)"}}, "spec.containers[0].volumeMounts[0] (v).subPathExpr: subPathExpr and subPath are mutually exclusive"},
		{"dotdot", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}, []v1.VolumeMount{{Name: "v", MountPath: "/v", SubPath: "../x"}}, "spec.containers[0].volumeMounts[0] (v).subPath"},
	} {
		pod := testPod(tc.name, v1.RestartPolicyAlways, v1.Container{Name: "c", VolumeMounts: tc.mounts})
		pod.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: tc.source}}
		err := rt.SyncPod(ctxT(t), pod, nil)
		if !errors.Is(err, runtime.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalidArgument naming %q", tc.name, err, tc.want)
		}
	}

	// Declared only: the pod runs, and the event names them.
	rec := record.NewFakeRecorder(100)
	rt.SetRecorder(rec)
	limit := resource.MustParse("1Gi")
	pod := testPod("declared", v1.RestartPolicyAlways, v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "scratch", MountPath: "/s"}}})
	pod.Spec.Volumes = []v1.Volume{
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}},
	}
	if err := rt.SyncPod(ctxT(t), pod, nil); err != nil {
		t.Fatal(err)
	}
	ev := drain(rec)
	for _, want := range []string{"spec.volumes[0] (cfg).configMap: not supported by podlife's CRI adapter (emptyDir and hostPath are); not mounted", "spec.volumes[1] (scratch).emptyDir.sizeLimit: not enforced"} {
		if !strings.Contains(ev, want) {
			t.Errorf("no %q among\n%s", want, ev)
		}
	}

	// A hostPath of the wrong type: the container is not created.
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := v1.HostPathDirectory
	hp := testPod("hostfile", v1.RestartPolicyAlways, v1.Container{Name: "c", VolumeMounts: mount})
	hp.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: file, Type: &dir}}}}
	err := rt.SyncPod(ctxT(t), hp, nil)
	if want := `MountVolume.SetUp failed for volume "v" : hostPath type check failed: ` + file + " is not a directory"; !errors.Is(err, runtime.ErrFailedPrecondition) || !strings.Contains(err.Error(), want) {
		t.Errorf("hostPath of the wrong type: %v, want %q", err, want)
	}
	if podStatus(t, rt, hp).FindContainerStatusByName("c") != nil {
		t.Error("container created with a hostPath of the wrong type")
	}
}

// subPathExpr is expanded against the container's environment, with the
// kubelet's checks and messages ("Variable Expansion should allow
// substituting values in a volume subpath", "should fail substituting
// values in a volume subpath with backticks / absolute path"); it was
// refused before.
func TestSubPathExpr(t *testing.T) {
	srv, ep := startFake(t, fakecri.Options{})
	root := t.TempDir()
	rt := newRuntime(t, ep, func(o *cri.Options) { o.VolumeRoot = root })
	pod := func(name, podName string) *v1.Pod {
		p := testPod(name, v1.RestartPolicyAlways, v1.Container{Name: "c",
			Env: []v1.EnvVar{
				{Name: "POD_NAME", Value: podName},
				{Name: "ANNOTATION", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.annotations['mysubpath']"}}},
			},
			VolumeMounts: []v1.VolumeMount{{Name: "workdir1", MountPath: "/subpath_mount", SubPathExpr: "$(ANNOTATION)/$(POD_NAME)"}},
		})
		p.Annotations = map[string]string{"mysubpath": "mypath"}
		p.Spec.Volumes = []v1.Volume{{Name: "workdir1", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
		return p
	}
	ok := pod("expr", "foo")
	if err := rt.SyncPod(ctxT(t), ok, nil); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(root, string(ok.UID), "volumes", "kubernetes.io~empty-dir", "workdir1", "mypath", "foo")
	mounts := slices.DeleteFunc(configOf(t, srv, rt, ok, "c").GetMounts(), func(m *runtimeapi.Mount) bool {
		return m.GetContainerPath() == v1.TerminationMessagePathDefault || m.GetContainerPath() == "/etc/hosts"
	})
	if len(mounts) != 1 || mounts[0].GetHostPath() != want {
		t.Errorf("mounts %v, want %s", mounts, want)
	}
	if fi, err := os.Stat(want); err != nil || !fi.IsDir() {
		t.Errorf("subPathExpr folder: %v, %v", fi, err)
	}

	abs := pod("abs", "/tmp")
	abs.Spec.Containers[0].VolumeMounts[0].SubPathExpr = "$(POD_NAME)"
	missing := pod("missing", "foo")
	missing.Annotations = nil
	for _, tc := range []struct {
		pod  *v1.Pod
		want string
	}{
		{pod("dotdot", ".."), "unable to provision SubPath `mypath/..`: must not contain '..'"},
		{abs, "error SubPath `/tmp` must not be an absolute path"},
		{missing, "missing value for ANNOTATION"},
	} {
		err := rt.SyncPod(ctxT(t), tc.pod, nil)
		if !errors.Is(err, runtime.ErrFailedPrecondition) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrFailedPrecondition with %q", tc.pod.Name, err, tc.want)
		}
	}
}
