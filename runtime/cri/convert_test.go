package cri

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

func TestLabelsAndAnnotations(t *testing.T) {
	grace := int64(15)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod", UID: "u1",
			Labels:      map[string]string{"app": "web", LabelPodName: "spoofed"},
			Annotations: map[string]string{"note": "x"}},
		Spec: v1.PodSpec{TerminationGracePeriodSeconds: &grace},
	}
	c := &v1.Container{Name: "nginx", Image: "nginx:1", TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageReadFile}

	if diff := cmp.Diff(map[string]string{
		"app": "web", LabelPodName: "web", LabelPodNamespace: "prod", LabelPodUID: "u1",
	}, sandboxLabels(pod)); diff != "" {
		t.Errorf("sandbox labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"note": "x"}, sandboxAnnotations(pod)); diff != "" {
		t.Errorf("sandbox annotations (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{
		LabelPodName: "web", LabelPodNamespace: "prod", LabelPodUID: "u1", LabelContainerName: "nginx",
	}, containerLabels(pod, c)); diff != "" {
		t.Errorf("container labels (-want +got):\n%s", diff)
	}
	ann := containerAnnotations(pod, c, 0xabc, 4)
	if diff := cmp.Diff(map[string]string{
		AnnotationContainerHash: "abc", AnnotationContainerRestartCount: "4",
		AnnotationTerminationMessagePath: "/dev/termination-log", AnnotationTerminationMessagePolicy: "File",
		AnnotationPodTerminationGracePeriod: "15",
	}, ann); diff != "" {
		t.Errorf("container annotations (-want +got):\n%s", diff)
	}
	// And back.
	info := infoFromAnnotations(ann)
	if info.Hash != 0xabc || info.RestartCount != 4 || info.GracePeriod == nil || *info.GracePeriod != 15 {
		t.Errorf("infoFromAnnotations: %+v", info)
	}
	if id := identityFromLabels(containerLabels(pod, c)); id != (podIdentity{UID: "u1", Name: "web", Namespace: "prod"}) {
		t.Errorf("identityFromLabels: %+v", id)
	}
}

func TestInfoFromAnnotations(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   map[string]string
		want containerInfo
	}{
		{"none", nil, containerInfo{}},
		{"garbage", map[string]string{AnnotationContainerHash: "zz", AnnotationContainerRestartCount: "-3", AnnotationPodTerminationGracePeriod: "x"}, containerInfo{}},
		{"hash and count", map[string]string{AnnotationContainerHash: "ff", AnnotationContainerRestartCount: "2"}, containerInfo{Hash: 255, RestartCount: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, infoFromAnnotations(tc.in), cmp.AllowUnexported(containerInfo{})); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestToContainerStatus(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		in   *runtimeapi.ContainerStatus
		want *runtime.ContainerStatus
	}{
		{
			name: "exited, labelled",
			in: &runtimeapi.ContainerStatus{
				Id: "c1", Metadata: &runtimeapi.ContainerMetadata{Name: "meta", Attempt: 3},
				State: runtimeapi.ContainerState_CONTAINER_EXITED, CreatedAt: ts.UnixNano(), StartedAt: ts.Add(time.Second).UnixNano(), FinishedAt: ts.Add(2 * time.Second).UnixNano(),
				ExitCode: 2, Image: &runtimeapi.ImageSpec{Image: "img:1"}, ImageRef: "sha256:1", Reason: "Error", Message: "boom",
				Labels:      map[string]string{LabelContainerName: "app"},
				Annotations: map[string]string{AnnotationContainerHash: "10", AnnotationContainerRestartCount: "3"},
			},
			want: &runtime.ContainerStatus{
				ID: runtime.ContainerID{Type: "containerd", ID: "c1"}, Name: "app", State: runtime.ContainerStateExited,
				CreatedAt: time.Unix(0, ts.UnixNano()), StartedAt: time.Unix(0, ts.Add(time.Second).UnixNano()), FinishedAt: time.Unix(0, ts.Add(2*time.Second).UnixNano()),
				ExitCode: 2, Image: "img:1", ImageID: "sha256:1", Hash: 16, RestartCount: 3, Reason: "Error", Message: "boom",
			},
		},
		{
			name: "unlabelled, unknown state, no times",
			in:   &runtimeapi.ContainerStatus{Id: "c2", Metadata: &runtimeapi.ContainerMetadata{Name: "meta"}, State: runtimeapi.ContainerState_CONTAINER_UNKNOWN},
			want: &runtime.ContainerStatus{ID: runtime.ContainerID{Type: "containerd", ID: "c2"}, Name: "meta", State: runtime.ContainerStateUnknown},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, toContainerStatus("containerd", tc.in)); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestToSandboxStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   *runtimeapi.PodSandboxStatus
		want *runtime.SandboxStatus
	}{
		{
			name: "ready, node network",
			in: &runtimeapi.PodSandboxStatus{Id: "s1", State: runtimeapi.PodSandboxState_SANDBOX_READY, Metadata: &runtimeapi.PodSandboxMetadata{Attempt: 2},
				Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}}},
			want: &runtime.SandboxStatus{ID: "s1", State: runtime.SandboxStateReady, Attempt: 2, Network: "node"},
		},
		{
			name: "not ready, pod network, two IPs",
			in: &runtimeapi.PodSandboxStatus{Id: "s2", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, CreatedAt: 5,
				Network: &runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.2", AdditionalIps: []*runtimeapi.PodIP{{Ip: "fd00::2"}}}},
			want: &runtime.SandboxStatus{ID: "s2", State: runtime.SandboxStateNotReady, CreatedAt: time.Unix(0, 5), IPs: []string{"10.0.0.2", "fd00::2"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, toSandboxStatus(tc.in)); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestToContainerAndSandbox(t *testing.T) {
	c := toContainer("fakecri", &runtimeapi.Container{Id: "c", PodSandboxId: "s", Metadata: &runtimeapi.ContainerMetadata{Name: "m", Attempt: 3}, State: runtimeapi.ContainerState_CONTAINER_CREATED,
		Image: &runtimeapi.ImageSpec{Image: "i"}, ImageRef: "r", Annotations: map[string]string{AnnotationContainerHash: "1f"}})
	if diff := cmp.Diff(&runtime.Container{ID: runtime.ContainerID{Type: "fakecri", ID: "c"}, Name: "m", Image: "i", ImageID: "r", Hash: 31, State: runtime.ContainerStateCreated,
		Attempt: 3, SandboxID: "s"}, c); diff != "" {
		t.Error(diff)
	}
	for state, want := range map[runtimeapi.PodSandboxState]runtime.ContainerState{
		runtimeapi.PodSandboxState_SANDBOX_READY:    runtime.ContainerStateRunning,
		runtimeapi.PodSandboxState_SANDBOX_NOTREADY: runtime.ContainerStateExited,
	} {
		if got := toSandboxContainer("x", &runtimeapi.PodSandbox{Id: "s", State: state}).State; got != want {
			t.Errorf("sandbox %s: state %s, want %s", state, got, want)
		}
	}
}

func TestFromGRPC(t *testing.T) {
	for _, tc := range []struct {
		in   error
		want error
	}{
		{status.Error(codes.NotFound, "x"), runtime.ErrNotFound},
		{status.Error(codes.AlreadyExists, "x"), runtime.ErrAlreadyExists},
		{status.Error(codes.Unavailable, "x"), runtime.ErrUnavailable},
		{status.Error(codes.DeadlineExceeded, "x"), runtime.ErrDeadlineExceeded},
		{status.Error(codes.Canceled, "x"), runtime.ErrCanceled},
		{status.Error(codes.InvalidArgument, "x"), runtime.ErrInvalidArgument},
		{status.Error(codes.FailedPrecondition, "x"), runtime.ErrFailedPrecondition},
		{status.Error(codes.Unimplemented, "x"), runtime.ErrUnimplemented},
		{status.Error(codes.Internal, "x"), runtime.ErrUnknown},
		{fmt.Errorf("wrapped: %w", context.DeadlineExceeded), runtime.ErrDeadlineExceeded},
		{context.Canceled, runtime.ErrCanceled},
		{errors.New("plain"), runtime.ErrUnknown},
	} {
		got := fromGRPC(tc.in)
		if !errors.Is(got, tc.want) || !errors.Is(got, tc.in) {
			t.Errorf("fromGRPC(%v) = %v; want it to be %v and keep the original", tc.in, got, tc.want)
		}
	}
	if fromGRPC(nil) != nil {
		t.Error("fromGRPC(nil) != nil")
	}
}

func TestSandboxConfig(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "n", UID: "u"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "i"}}}}
	node := &Runtime{opts: Options{CgroupParent: "/podlife"}.withDefaults()}
	cfg, err := node.sandboxConfig(pod, 3)
	if err != nil || cfg.Hostname != "" || cfg.Linux.CgroupParent != "/podlife/podu" || cfg.Metadata.Attempt != 3 ||
		cfg.Linux.SecurityContext.NamespaceOptions.Network != runtimeapi.NamespaceMode_NODE || cfg.Linux.Sysctls != nil {
		t.Errorf("node-network sandbox config: %v, %v", cfg, err)
	}
	if cfg.Linux.SecurityContext.Privileged {
		t.Error("sandbox privileged without a privileged container")
	}
	yes := true
	for _, edit := range []func(p *v1.Pod){
		func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "i", SecurityContext: &v1.SecurityContext{Privileged: &yes}}}
		},
		func(p *v1.Pod) { p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Privileged: &yes} },
		func(p *v1.Pod) {
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "e", SecurityContext: &v1.SecurityContext{Privileged: &yes}}}}
		},
	} {
		priv := pod.DeepCopy()
		edit(priv)
		if cfg, err := node.sandboxConfig(priv, 0); err != nil || !cfg.Linux.SecurityContext.Privileged {
			t.Errorf("sandbox of a pod with a privileged container not privileged: %v, %v", cfg.GetLinux().GetSecurityContext(), err)
		}
	}
	podNet := &Runtime{opts: Options{CgroupParent: "/podlife", NetworkMode: NetworkModePod}.withDefaults()}
	cfg, err = podNet.sandboxConfig(pod, 0)
	if err != nil || cfg.Hostname != "p" || cfg.Linux.SecurityContext.NamespaceOptions.Network != runtimeapi.NamespaceMode_POD {
		t.Errorf("pod-network sandbox config: %v, %v", cfg, err)
	}
	pod.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "kernel/shm_rmid_forced", Value: "1"}, {Name: "net.ipv4.tcp_syncookies", Value: "0"}}}
	cfg, err = podNet.sandboxConfig(pod, 0)
	if want := map[string]string{"kernel.shm_rmid_forced": "1", "net.ipv4.tcp_syncookies": "0"}; err != nil || !maps.Equal(cfg.Linux.Sysctls, want) {
		t.Errorf("sysctls: %v (%v), want %v", cfg.GetLinux().GetSysctls(), err, want)
	}
	pod.Spec.HostNetwork = true
	if cfg, err = podNet.sandboxConfig(pod, 0); err != nil || cfg.Hostname != "" || cfg.Linux.SecurityContext.NamespaceOptions.Network != runtimeapi.NamespaceMode_NODE {
		t.Errorf("host-network pod in pod-network mode: %v, %v", cfg, err)
	}
	// A pod on the node's network cannot set net.* sysctls: refused.
	if err := podNet.checkPod(pod); err == nil || !strings.Contains(err.Error(), `spec.securityContext.sysctls[1]: "net.ipv4.tcp_syncookies" needs the pod's own network namespace`) ||
		strings.Contains(err.Error(), "sysctls[0]") {
		t.Errorf("checkPod of a host-network pod with a net sysctl: %v", err)
	}
	pod.Spec.HostNetwork = false
	if err := podNet.checkPod(pod); err != nil {
		t.Errorf("checkPod of a pod-network pod with sysctls: %v", err)
	}
	if err := node.checkPod(pod); err == nil {
		t.Error("checkPod with NetworkModeNode let a net sysctl through")
	}
}
