package cri

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "1", "B": "two"}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	for in, want := range map[string]string{
		"plain":          "plain",
		"$(A)":           "1",
		"x$(A)y$(B)z":    "x1ytwoz",
		"$(MISSING)":     "$(MISSING)",
		"$$(A)":          "$(A)",
		"$$":             "$",
		"a$b":            "a$b",
		"end$":           "end$",
		"$(unterminated": "$(unterminated",
		"$()":            "$()",
	} {
		if got := expand(in, lookup); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestContainerEnvDownwardAPI(t *testing.T) {
	pod := specPod(v1.Container{Resources: v1.ResourceRequirements{Requests: rl("cpu", "250m", "memory", "64Mi"), Limits: rl("memory", "128Mi")}})
	pod.Labels = map[string]string{"app": "web"}
	pod.Annotations = map[string]string{"note": "x"}
	pod.Spec.NodeName = "node-1"
	pod.Spec.ServiceAccountName = "sa"
	c := &pod.Spec.Containers[0]
	field := func(p string) *v1.EnvVarSource {
		return &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: p}}
	}
	res := func(r, div string) *v1.EnvVarSource {
		s := &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: r}}
		if div != "" {
			s.ResourceFieldRef.Divisor = resource.MustParse(div)
		}
		return s
	}
	c.Env = []v1.EnvVar{
		{Name: "NAME", ValueFrom: field("metadata.name")},
		{Name: "NS", ValueFrom: field("metadata.namespace")},
		{Name: "UID", ValueFrom: field("metadata.uid")},
		{Name: "APP", ValueFrom: field("metadata.labels['app']")},
		{Name: "NOTE", ValueFrom: field("metadata.annotations['note']")},
		{Name: "NODE", ValueFrom: field("spec.nodeName")},
		{Name: "SA", ValueFrom: field("spec.serviceAccountName")},
		{Name: "HOST_IP", ValueFrom: field("status.hostIP")},
		{Name: "POD_IP", ValueFrom: field("status.podIP")},
		{Name: "POD_IPS", ValueFrom: field("status.podIPs")},
		{Name: "CPU_REQ_M", ValueFrom: res("requests.cpu", "1m")},
		{Name: "CPU_REQ", ValueFrom: res("requests.cpu", "")},
		{Name: "CPU_LIMIT", ValueFrom: res("limits.cpu", "")},
		{Name: "MEM_LIMIT_MI", ValueFrom: res("limits.memory", "1Mi")},
		{Name: "GREETING", Value: "hi $(NAME) in $(NS), $(LATER)"},
		{Name: "LATER", Value: "late"},
	}
	names, values, err := containerEnv(pod, c, envContext{
		podIPs: []string{"10.0.0.5", "fd00::5"}, hostIPs: []string{"192.168.1.2"},
		allocatable: rl("cpu", "4", "memory", "8Gi"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"NAME": "p", "NS": "ns", "UID": "u", "APP": "web", "NOTE": "x", "NODE": "node-1", "SA": "sa",
		"HOST_IP": "192.168.1.2", "POD_IP": "10.0.0.5", "POD_IPS": "10.0.0.5,fd00::5",
		"CPU_REQ_M": "250", "CPU_REQ": "1", "CPU_LIMIT": "4", "MEM_LIMIT_MI": "128",
		"GREETING": "hi p in ns, $(LATER)", "LATER": "late",
	}
	if diff := cmp.Diff(want, values); diff != "" {
		t.Fatalf("env (-want +got):\n%s", diff)
	}
	if len(names) != len(c.Env) || names[0] != "NAME" || names[len(names)-1] != "LATER" {
		t.Fatalf("order %v", names)
	}

	// Command and args are expanded against the environment.
	c.Command = []string{"echo", "$(GREETING)"}
	c.Args = []string{"$$(NAME)", "$(NAME)"}
	r := specRuntime(t)
	cfg, err := r.containerConfig(pod, c, 0, imageUser{}, envContext{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(append(cfg.GetCommand(), cfg.GetArgs()...), " "); got != "echo hi p in ns, $(LATER) $(NAME) p" {
		t.Fatalf("command and args: %q", got)
	}
	if len(cfg.GetEnvs()) != len(c.Env) {
		t.Fatalf("%d env vars in the CRI config", len(cfg.GetEnvs()))
	}
}

func TestUnsupportedDownwardAPIPaths(t *testing.T) {
	pod := specPod(v1.Container{Env: []v1.EnvVar{
		{Name: "A", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.generation"}}},
		{Name: "B", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.nvidia.com/gpu"}}},
	}})
	err := validatePod(pod)
	if err == nil || !strings.Contains(err.Error(), `spec.containers[0].env[0].valueFrom.fieldRef.fieldPath "metadata.generation"`) ||
		!strings.Contains(err.Error(), "spec.containers[0].env[1].valueFrom.resourceFieldRef") {
		t.Fatalf("got %v", err)
	}
}
