package runtime_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podlife/podlife/runtime"
)

func res(kv ...string) v1.ResourceList {
	l := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func TestQOSClass(t *testing.T) {
	for _, tc := range []struct {
		name string
		init []v1.ResourceRequirements
		regs []v1.ResourceRequirements
		want v1.PodQOSClass
	}{
		{"nothing", nil, []v1.ResourceRequirements{{}}, v1.PodQOSBestEffort},
		{"only other resources", nil, []v1.ResourceRequirements{{Limits: res("nvidia.com/gpu", "1")}}, v1.PodQOSBestEffort},
		{"limits only: requests default to them", nil, []v1.ResourceRequirements{{Limits: res("cpu", "1", "memory", "1Gi")}}, v1.PodQOSGuaranteed},
		{"equal requests and limits", nil, []v1.ResourceRequirements{{Limits: res("cpu", "500m", "memory", "1Gi"), Requests: res("cpu", "0.5", "memory", "1024Mi")}}, v1.PodQOSGuaranteed},
		{"request below limit", nil, []v1.ResourceRequirements{{Limits: res("cpu", "1", "memory", "1Gi"), Requests: res("cpu", "100m")}}, v1.PodQOSBurstable},
		{"memory limit only", nil, []v1.ResourceRequirements{{Limits: res("memory", "1Gi")}}, v1.PodQOSBurstable},
		{"one container without", nil, []v1.ResourceRequirements{{Limits: res("cpu", "1", "memory", "1Gi")}, {}}, v1.PodQOSBurstable},
		{"init container without", []v1.ResourceRequirements{{}}, []v1.ResourceRequirements{{Limits: res("cpu", "1", "memory", "1Gi")}}, v1.PodQOSBurstable},
		{"request only", nil, []v1.ResourceRequirements{{Requests: res("cpu", "1")}}, v1.PodQOSBurstable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{}
			for _, r := range tc.init {
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, v1.Container{Resources: r})
			}
			for _, r := range tc.regs {
				pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Resources: r})
			}
			if got := runtime.QOSClass(pod); got != tc.want {
				t.Fatalf("QOSClass = %s, want %s", got, tc.want)
			}
		})
	}
}
