package podresources

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func ctr(mem string) v1.Container {
	c := v1.Container{}
	if mem != "" {
		c.Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse(mem)}
		c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse(mem)}
	}
	return c
}

func sidecar(mem string) v1.Container {
	c := ctr(mem)
	always := v1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

func TestSum(t *testing.T) {
	for _, tc := range []struct {
		name      string
		init      []v1.Container
		apps      []v1.Container
		want      int64
		all, some bool
	}{
		{"apps add up", nil, []v1.Container{ctr("100"), ctr("200")}, 300, true, true},
		{"a big init container wins", []v1.Container{ctr("1000")}, []v1.Container{ctr("100")}, 1000, true, true},
		{"a small init container does not", []v1.Container{ctr("50")}, []v1.Container{ctr("100")}, 100, true, true},
		{"sidecars run with the apps", []v1.Container{sidecar("10")}, []v1.Container{ctr("100")}, 110, true, true},
		// The init container after the sidecar runs beside it: 10+500.
		{"an init container beside earlier sidecars", []v1.Container{sidecar("10"), ctr("500"), sidecar("20")}, []v1.Container{ctr("100")}, 510, true, true},
		// Before the sidecar: alone.
		{"an init container before the sidecars", []v1.Container{ctr("500"), sidecar("10")}, []v1.Container{ctr("100")}, 500, true, true},
		{"one container without", nil, []v1.Container{ctr("100"), ctr("")}, 100, false, true},
		{"none has one", []v1.Container{ctr("")}, []v1.Container{ctr("")}, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: tc.init, Containers: tc.apps}}
			for _, a := range []Amount{Requests(v1.ResourceMemory), Limits(v1.ResourceMemory)} {
				got, all, some := Sum(pod, a)
				if got != tc.want || all != tc.all || some != tc.some {
					t.Errorf("Sum = %d, all %v, any %v; want %d, %v, %v", got, all, some, tc.want, tc.all, tc.some)
				}
			}
		})
	}
}

func TestLimitsCountsAnExplicitZero(t *testing.T) {
	c := v1.Container{}
	c.Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("0")}
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{c}}}
	if got, all, some := Sum(pod, Limits(v1.ResourceEphemeralStorage)); got != 0 || !all || !some {
		t.Errorf("Sum = %d, all %v, any %v; want an explicit limit of 0", got, all, some)
	}
}
