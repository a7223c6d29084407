package envvars

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodFieldValue(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1",
			Labels: map[string]string{"b": "2", "a": "x\"y"}, Annotations: map[string]string{"k": "v"}},
		Spec: v1.PodSpec{NodeName: "n1", ServiceAccountName: "sa"},
	}
	podIPs, hostIPs := []string{"10.1.0.5", "fd00::5"}, []string{"192.168.1.2", "fd01::2"}
	for path, want := range map[string]string{
		"metadata.name":             "web",
		"metadata.namespace":        "ns",
		"metadata.uid":              "u1",
		"metadata.labels['a']":      "x\"y",
		"metadata.labels['none']":   "",
		"metadata.annotations['k']": "v",
		"metadata.labels":           "a=\"x\\\"y\"\nb=\"2\"",
		"metadata.annotations":      "k=\"v\"",
		"spec.nodeName":             "n1",
		"spec.serviceAccountName":   "sa",
		"status.podIP":              "10.1.0.5",
		"status.podIPs":             "10.1.0.5,fd00::5",
		"status.hostIP":             "192.168.1.2",
		"status.hostIPs":            "192.168.1.2,fd01::2",
	} {
		got, err := PodFieldValue(pod, path, podIPs, hostIPs)
		if err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", path, got, err, want)
		}
	}
	if got, err := PodFieldValue(pod, "status.podIP", nil, nil); err != nil || got != "" {
		t.Errorf("podIP unknown = %q, %v", got, err)
	}
	for _, path := range []string{"status.hostIP", "status.phase", "spec.containers", "metadata.labels['x"} {
		if _, err := PodFieldValue(pod, path, podIPs, nil); err == nil {
			t.Errorf("%s: no error", path)
		}
	}
}

func TestResourceValue(t *testing.T) {
	rl := func(kv ...string) v1.ResourceList {
		l := v1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Limits: rl("memory", "32Mi")}}},
		Containers: []v1.Container{
			{Name: "c", Resources: v1.ResourceRequirements{Requests: rl("cpu", "250m", "memory", "100Mi"), Limits: rl("cpu", "1500m")}},
			{Name: "other", Resources: v1.ResourceRequirements{Limits: rl("memory", "1Gi")}},
		},
	}}
	c := &pod.Spec.Containers[0]
	alloc := rl("cpu", "4", "memory", "8Gi", "ephemeral-storage", "100Gi")
	sel := func(res, div, container string) *v1.ResourceFieldSelector {
		s := &v1.ResourceFieldSelector{Resource: res, ContainerName: container}
		if div != "" {
			s.Divisor = resource.MustParse(div)
		}
		return s
	}
	for _, tc := range []struct {
		sel   *v1.ResourceFieldSelector
		alloc v1.ResourceList
		want  string
	}{
		{sel("limits.cpu", "", ""), alloc, "2"}, // 1.5 rounded up
		{sel("limits.cpu", "1m", ""), alloc, "1500"},
		{sel("requests.cpu", "1m", ""), alloc, "250"},
		{sel("requests.memory", "1Mi", ""), alloc, "100"},
		{sel("limits.memory", "1Mi", ""), alloc, "8192"}, // unset: node allocatable
		{sel("limits.memory", "", ""), nil, "0"},         // unset and unknown
		{sel("limits.ephemeral-storage", "1Gi", ""), alloc, "100"},
		{sel("requests.ephemeral-storage", "", ""), alloc, "0"}, // a request is not defaulted
		{sel("limits.memory", "1Mi", "other"), alloc, "1024"},
		{sel("limits.memory", "1Mi", "init"), alloc, "32"},
		{sel("limits.hugepages-2Mi", "", ""), alloc, "0"},
	} {
		got, err := ResourceValue(pod, c, tc.sel, tc.alloc)
		if err != nil || got != tc.want {
			t.Errorf("%+v = %q, %v; want %q", tc.sel, got, err, tc.want)
		}
	}
	for _, s := range []*v1.ResourceFieldSelector{sel("limits.gpu", "", ""), sel("cpu", "", ""), sel("limits.cpu", "", "nope")} {
		if _, err := ResourceValue(pod, c, s, alloc); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
}
