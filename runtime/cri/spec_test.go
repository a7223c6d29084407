package cri

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

func rl(kv ...string) v1.ResourceList {
	l := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func specRuntime(t *testing.T, mutate ...func(*Options)) *Runtime {
	t.Helper()
	o := Options{Endpoint: "unix:///nonexistent/cri.sock"}
	for _, m := range mutate {
		m(&o)
	}
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func specPod(cs ...v1.Container) *v1.Pod {
	for i := range cs {
		if cs[i].Name == "" {
			cs[i].Name = "c" + string(rune('0'+i))
		}
		cs[i].Image = "img"
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}, Spec: v1.PodSpec{Containers: cs}}
}

func TestLinuxResources(t *testing.T) {
	const gi = int64(1) << 30
	for _, tc := range []struct {
		name       string
		pod        *v1.Pod
		nodeMemory int64
		want       *runtimeapi.LinuxContainerResources
	}{
		{"best effort", specPod(v1.Container{}), 0, &runtimeapi.LinuxContainerResources{CpuShares: 2, OomScoreAdj: 1000}},
		{"guaranteed", specPod(v1.Container{Resources: v1.ResourceRequirements{Limits: rl("cpu", "500m", "memory", "256Mi")}}), 0,
			&runtimeapi.LinuxContainerResources{CpuShares: 512, CpuPeriod: 100000, CpuQuota: 50000, MemoryLimitInBytes: 256 << 20, OomScoreAdj: -997}},
		{"burstable, node memory known", specPod(v1.Container{Resources: v1.ResourceRequirements{Requests: rl("cpu", "100m", "memory", "1Gi"), Limits: rl("memory", "2Gi")}}), 4 * gi,
			&runtimeapi.LinuxContainerResources{CpuShares: 102, MemoryLimitInBytes: 2 * gi, OomScoreAdj: 750}},
		{"burstable, node memory unknown", specPod(v1.Container{Resources: v1.ResourceRequirements{Requests: rl("memory", "1Gi")}}), 0,
			&runtimeapi.LinuxContainerResources{CpuShares: 2, OomScoreAdj: 999}},
		{"burstable, request above node memory", specPod(v1.Container{Resources: v1.ResourceRequirements{Requests: rl("memory", "8Gi")}}), 4 * gi,
			&runtimeapi.LinuxContainerResources{CpuShares: 2, OomScoreAdj: 3}},
		{"tiny cpu: minimum shares and quota", specPod(v1.Container{Resources: v1.ResourceRequirements{Limits: rl("cpu", "1m"), Requests: rl("cpu", "1m")}}), 0,
			&runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, CpuQuota: 1000, OomScoreAdj: 999}},
		{"huge cpu: maximum shares", specPod(v1.Container{Resources: v1.ResourceRequirements{Requests: rl("cpu", "1000")}}), 0,
			&runtimeapi.LinuxContainerResources{CpuShares: 262144, OomScoreAdj: 999}},
		{"hugepages ignored", specPod(v1.Container{Resources: v1.ResourceRequirements{Limits: rl("hugepages-2Mi", "2Mi")}}), 0,
			&runtimeapi.LinuxContainerResources{CpuShares: 2, OomScoreAdj: 1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := linuxResources(tc.pod, &tc.pod.Spec.Containers[0], tc.nodeMemory)
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestContainerConfigSecurityContext(t *testing.T) {
	r := specRuntime(t, func(o *Options) { o.SeccompProfileRoot = "/seccomp" })
	uid, gid, fs := int64(1000), int64(2000), int64(3000)
	yes, no := true, false
	profile := "my.json"
	pod := specPod(v1.Container{SecurityContext: &v1.SecurityContext{
		RunAsGroup:               &gid,
		Privileged:               &yes,
		ReadOnlyRootFilesystem:   &yes,
		AllowPrivilegeEscalation: &no,
		Capabilities:             &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN"}, Drop: []v1.Capability{"ALL"}},
		SeccompProfile:           &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: &profile},
	}})
	pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &fs, FSGroup: &fs, SupplementalGroups: []int64{5}, RunAsNonRoot: &yes}
	cfg, err := r.containerConfig(pod, &pod.Spec.Containers[0], 0, imageUser{}, envContext{})
	if err != nil {
		t.Fatal(err)
	}
	sc := cfg.GetLinux().GetSecurityContext()
	want := &runtimeapi.LinuxContainerSecurityContext{
		NamespaceOptions:   r.namespaceOptions(pod),
		Privileged:         true,
		Capabilities:       &runtimeapi.Capability{AddCapabilities: []string{"NET_ADMIN"}, DropCapabilities: []string{"ALL"}},
		RunAsUser:          &runtimeapi.Int64Value{Value: 1000},
		RunAsGroup:         &runtimeapi.Int64Value{Value: 2000}, // the container's wins
		ReadonlyRootfs:     true,
		NoNewPrivs:         true,
		SupplementalGroups: []int64{5, 3000},
		Seccomp:            &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/seccomp/my.json"},
	}
	if diff := cmp.Diff(want, sc, protocmp.Transform()); diff != "" {
		t.Fatalf("security context (-want +got):\n%s", diff)
	}

	// Defaults: no_new_privs off, seccomp Unconfined; RuntimeDefault maps.
	plain := specPod(v1.Container{})
	cfg, _ = r.containerConfig(plain, &plain.Spec.Containers[0], 0, imageUser{}, envContext{})
	if sc := cfg.GetLinux().GetSecurityContext(); sc.GetNoNewPrivs() || sc.GetSeccomp().GetProfileType() != runtimeapi.SecurityProfile_Unconfined || sc.GetRunAsUser() != nil {
		t.Fatalf("defaults: %v", sc)
	}
	plain.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}}
	cfg, _ = r.containerConfig(plain, &plain.Spec.Containers[0], 0, imageUser{}, envContext{})
	if cfg.GetLinux().GetSecurityContext().GetSeccomp().GetProfileType() != runtimeapi.SecurityProfile_RuntimeDefault {
		t.Fatalf("pod-level RuntimeDefault: %v", cfg.GetLinux().GetSecurityContext().GetSeccomp())
	}
}

func TestRunAsNonRoot(t *testing.T) {
	r := specRuntime(t)
	zero, thousand := int64(0), int64(1000)
	yes := true
	for _, tc := range []struct {
		name    string
		runAs   *int64
		user    imageUser
		wantErr string
	}{
		{"image root by uid", nil, imageUser{uid: &zero}, "container has runAsNonRoot and image will run as root"},
		{"image user unset counts as root", nil, imageUser{}, "container has runAsNonRoot and image will run as root"},
		{"image non-numeric user", nil, imageUser{name: "nginx"}, "image has non-numeric user (nginx)"},
		{"image uid 1000", nil, imageUser{uid: &thousand}, ""},
		{"runAsUser 0", &zero, imageUser{uid: &thousand}, "container's runAsUser breaks non-root policy"},
		{"runAsUser 1000 over a root image", &thousand, imageUser{uid: &zero}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := specPod(v1.Container{SecurityContext: &v1.SecurityContext{RunAsNonRoot: &yes, RunAsUser: tc.runAs}})
			_, err := r.containerConfig(pod, &pod.Spec.Containers[0], 0, tc.user, envContext{})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, runtime.ErrInvalidArgument)):
				t.Fatalf("got %v, want ErrInvalidArgument containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestUnsupportedFieldsAreNamed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*v1.Pod)
		want   string
	}{
		{"configMap volume", func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}}}
		}, "spec.volumes[0].configMap: not supported by podlife's CRI adapter"},
		{"secret volume", func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "a", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}, {Name: "v", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{}}}}
		}, "spec.volumes[1].secret"},
		{"volume mount", func(p *v1.Pod) { p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "v", MountPath: "/v"}} }, "spec.containers[0].volumeMounts[0]"},
		{"envFrom", func(p *v1.Pod) { p.Spec.Containers[0].EnvFrom = []v1.EnvFromSource{{}} }, "spec.containers[0].envFrom"},
		{"secret env", func(p *v1.Pod) {
			p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{}}}}
		}, "spec.containers[0].env[1].valueFrom"},
		{"hooks", func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "i", Image: "img", Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{TCPSocket: &v1.TCPSocketAction{}}}}}
		}, "spec.initContainers[0].lifecycle.preStop.tcpSocket"},
		{"sysctls", func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "a", Value: "b"}}}
		}, "spec.securityContext.sysctls"},
		{"pod resources", func(p *v1.Pod) { p.Spec.Resources = &v1.ResourceRequirements{} }, "spec.resources"},
		{"host PID", func(p *v1.Pod) { p.Spec.HostPID = true }, "spec.hostPID: not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := specPod(v1.Container{})
			tc.mutate(pod)
			err := validatePod(pod)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, runtime.ErrInvalidArgument) {
				t.Fatalf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
	// The service account token volume the API server adds is let through.
	pod := specPod(v1.Container{VolumeMounts: []v1.VolumeMount{{Name: "kube-api-access-x1", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}})
	pod.Spec.Volumes = []v1.Volume{{Name: "kube-api-access-x1", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}}}
	if err := validatePod(pod); err != nil {
		t.Fatalf("service account volume: %v", err)
	}
}

func TestVolumeMountsInConfig(t *testing.T) {
	root := t.TempDir()
	r := specRuntime(t, func(o *Options) { o.VolumeRoot = root })
	hc := v1.MountPropagationHostToContainer
	pod := specPod(v1.Container{VolumeMounts: []v1.VolumeMount{
		{Name: "e", MountPath: "/e", ReadOnly: true},
		{Name: "h", MountPath: "/h", SubPath: "x", MountPropagation: &hc},
		{Name: "kube-api-access-abc", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
	}})
	pod.Spec.Volumes = []v1.Volume{
		{Name: "e", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "h", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv"}}},
		{Name: "kube-api-access-abc", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}},
	}
	cfg, err := r.containerConfig(pod, &pod.Spec.Containers[0], 0, imageUser{}, envContext{})
	if err != nil {
		t.Fatal(err)
	}
	want := []*runtimeapi.Mount{
		{ContainerPath: "/e", HostPath: root + "/u/volumes/kubernetes.io~empty-dir/e", Readonly: true},
		{ContainerPath: "/h", HostPath: "/srv/x", Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
	}
	if diff := cmp.Diff(want, cfg.GetMounts(), protocmp.Transform()); diff != "" {
		t.Fatalf("mounts (-want +got):\n%s", diff)
	}
	// Unsupported volume features are refused by name.
	mem := specPod(v1.Container{VolumeMounts: []v1.VolumeMount{{Name: "m", MountPath: "/m", SubPathExpr: "$(X)"}}})
	mem.Spec.Volumes = []v1.Volume{{Name: "m", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}}}
	err = validatePod(mem)
	if err == nil || !strings.Contains(err.Error(), "spec.volumes[0].emptyDir.medium") || !strings.Contains(err.Error(), "spec.containers[0].volumeMounts[0].subPathExpr") {
		t.Fatalf("got %v", err)
	}
}
