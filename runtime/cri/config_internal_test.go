package cri

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestLinuxResources(t *testing.T) {
	rl := func(kv ...string) v1.ResourceList {
		l := v1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	for _, tc := range []struct {
		name     string
		req, lim v1.ResourceList
		want     *runtimeapi.LinuxContainerResources
	}{
		{"none: BestEffort", nil, nil, &runtimeapi.LinuxContainerResources{CpuShares: 2, OomScoreAdj: 1000}},
		{"request only", rl("cpu", "250m"), nil, &runtimeapi.LinuxContainerResources{CpuShares: 256, OomScoreAdj: 999}},
		{"tiny request", rl("cpu", "1m"), nil, &runtimeapi.LinuxContainerResources{CpuShares: 2, OomScoreAdj: 999}},
		{"limit only: request defaults to it, Guaranteed", nil, rl("cpu", "500m", "memory", "256Mi"),
			&runtimeapi.LinuxContainerResources{CpuShares: 512, CpuPeriod: 100000, CpuQuota: 50000, MemoryLimitInBytes: 256 << 20, OomScoreAdj: -997}},
		{"both", rl("cpu", "100m"), rl("cpu", "2"), &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuPeriod: 100000, CpuQuota: 200000, OomScoreAdj: 999}},
		{"memory only: 1Gi of 4Gi", nil, rl("memory", "1Gi"), &runtimeapi.LinuxContainerResources{CpuShares: 2, MemoryLimitInBytes: 1 << 30, OomScoreAdj: 750}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Resources: v1.ResourceRequirements{Requests: tc.req, Limits: tc.lim}}}}}
			if d := cmp.Diff(tc.want, linuxResources(pod, &pod.Spec.Containers[0], 4<<30), protocmp.Transform()); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestEnvValueFrom(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1", Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"a": "b"}},
		Spec: v1.PodSpec{NodeName: "n1", ServiceAccountName: "sa", Containers: []v1.Container{{Name: "c",
			Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m"), v1.ResourceMemory: resource.MustParse("64Mi")}}}}},
	}
	c := &pod.Spec.Containers[0]
	for _, tc := range []struct {
		src  v1.EnvVarSource
		want string
	}{
		{v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}, "web"},
		{v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}, "ns"},
		{v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.uid"}}, "u1"},
		{v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}, "n1"},
		{v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.serviceAccountName"}}, "sa"},
		{v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}, "x"},
		{v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.annotations['a']"}}, "b"},
		{v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}, "2"},
		{v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1m")}}, "1500"},
		{v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}, "64"},
	} {
		got, err := envValue(pod, c, &tc.src)
		if err != nil || got != tc.want {
			t.Errorf("%+v = %q, %v; want %q", tc.src, got, err, tc.want)
		}
	}
	for _, src := range []v1.EnvVarSource{
		{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}},
		{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "requests.memory"}},
		{SecretKeyRef: &v1.SecretKeySelector{Key: "k"}},
	} {
		if _, err := envValue(pod, c, &src); err == nil {
			t.Errorf("%+v resolved", src)
		}
	}
}
