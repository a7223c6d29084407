package runtime

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestQOSClass(t *testing.T) {
	rl := func(kv ...string) v1.ResourceList {
		l := v1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	res := func(req, lim v1.ResourceList) v1.ResourceRequirements {
		return v1.ResourceRequirements{Requests: req, Limits: lim}
	}
	guaranteed := res(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))
	pod := func(init []v1.ResourceRequirements, regular ...v1.ResourceRequirements) *v1.Pod {
		p := &v1.Pod{}
		for i, r := range init {
			p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: "i" + string(rune('0'+i)), Resources: r})
		}
		for i, r := range regular {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "c" + string(rune('0'+i)), Resources: r})
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want v1.PodQOSClass
	}{
		{"no resources", pod(nil, res(nil, nil)), v1.PodQOSBestEffort},
		{"only other resources", pod(nil, res(rl("ephemeral-storage", "1Gi"), nil)), v1.PodQOSBestEffort},
		{"guaranteed", pod(nil, guaranteed, guaranteed), v1.PodQOSGuaranteed},
		{"limits only (requests defaulted)", pod(nil, res(nil, rl("cpu", "1", "memory", "1Gi"))), v1.PodQOSGuaranteed},
		{"same quantity, other spelling", pod(nil, res(rl("cpu", "1000m", "memory", "1024Mi"), rl("cpu", "1", "memory", "1Gi"))), v1.PodQOSGuaranteed},
		{"cpu only", pod(nil, res(rl("cpu", "1"), rl("cpu", "1"))), v1.PodQOSBurstable},
		{"request below limit", pod(nil, res(rl("cpu", "500m", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))), v1.PodQOSBurstable},
		{"requests only", pod(nil, res(rl("memory", "1Gi"), nil)), v1.PodQOSBurstable},
		{"guaranteed and best effort", pod(nil, guaranteed, res(nil, nil)), v1.PodQOSBurstable},
		{"best effort init container", pod([]v1.ResourceRequirements{res(nil, nil)}, guaranteed), v1.PodQOSBurstable},
		{"guaranteed init container", pod([]v1.ResourceRequirements{guaranteed}, guaranteed), v1.PodQOSGuaranteed},
		{"pod-level resources decide", func() *v1.Pod {
			p := pod(nil, res(nil, nil))
			r := guaranteed
			p.Spec.Resources = &r
			return p
		}(), v1.PodQOSGuaranteed},
		{"status class kept", func() *v1.Pod {
			p := pod(nil, res(nil, nil))
			p.Status.QOSClass = v1.PodQOSBurstable
			return p
		}(), v1.PodQOSBurstable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := QOSClass(tc.pod); got != tc.want {
				t.Errorf("QOSClass %s, want %s", got, tc.want)
			}
		})
	}
}
