package envvars_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podlife/podlife/agent/envvars"
	"github.com/podlife/podlife/runtime"
)

type recorder struct{ events []string }

func (r *recorder) Eventf(_ k8sruntime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	r.events = append(r.events, eventtype+" "+reason+" "+fmt.Sprintf(messageFmt, args...))
}

func ptr[T any](v T) *T { return &v }

func objects() []k8sruntime.Object {
	return []k8sruntime.Object{
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"b": "2", "a": "1", "bad=key": "x"}},
		&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sec"}, Data: map[string][]byte{"password": []byte("s3cret"), "a": []byte("from-secret")}},
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []v1.ServicePort{{Name: "https", Port: 443}}}},
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.9", Ports: []v1.ServicePort{{Port: 5432}}}},
	}
}

var kubernetesEnv = []envvars.EnvVar{
	{Name: "KUBERNETES_SERVICE_HOST", Value: "10.96.0.1"},
	{Name: "KUBERNETES_SERVICE_PORT", Value: "443"},
	{Name: "KUBERNETES_SERVICE_PORT_HTTPS", Value: "443"},
	{Name: "KUBERNETES_PORT", Value: "tcp://10.96.0.1:443"},
	{Name: "KUBERNETES_PORT_443_TCP", Value: "tcp://10.96.0.1:443"},
	{Name: "KUBERNETES_PORT_443_TCP_PROTO", Value: "tcp"},
	{Name: "KUBERNETES_PORT_443_TCP_PORT", Value: "443"},
	{Name: "KUBERNETES_PORT_443_TCP_ADDR", Value: "10.96.0.1"},
}

func pod(links *bool, c v1.Container) *v1.Pod {
	c.Name = "c"
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"},
		Spec:       v1.PodSpec{NodeName: "n1", EnableServiceLinks: links, Containers: []v1.Container{c}},
	}
}

func TestEnvOrderSourcesAndExpansion(t *testing.T) {
	rec := &recorder{}
	r := envvars.New(envvars.Options{
		Reader:      envvars.ClientReader{Client: fake.NewClientset(objects()...)},
		HostIPs:     func() []string { return []string{"192.168.0.2"} },
		Allocatable: func() v1.ResourceList { return v1.ResourceList{v1.ResourceMemory: resource.MustParse("2Gi")} },
		Recorder:    rec,
	})
	p := pod(ptr(false), v1.Container{
		EnvFrom: []v1.EnvFromSource{
			{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}},
			{Prefix: "S_", SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}}},
			{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "gone"}, Optional: ptr(true)}},
		},
		Env: []v1.EnvVar{
			{Name: "LATER_REF", Value: "$(Z)"}, // Z is defined after: left as written
			{Name: "Z", Value: "z"},
			{Name: "a", Value: "override-$(a)"}, // sees envFrom's a, keeps its place
			{Name: "HOST", Value: "$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"},
			{Name: "ESC", Value: "$$(Z)"},
			{Name: "PW", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}, Key: "password"}}},
			{Name: "CMB", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Key: "b"}}},
			{Name: "OPT_KEY", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Key: "nope", Optional: ptr(true)}}},
			{Name: "OPT_OBJ", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "gone"}, Key: "k", Optional: ptr(true)}}},
			{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "HOST_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
			{Name: "MEM", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "RAW", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "KUBERNETES_PORT", Value: "mine"}, // replaces the service variable
		},
	})
	got, err := r.Env(context.Background(), p, &p.Spec.Containers[0], []string{"10.1.0.7"})
	if err != nil {
		t.Fatal(err)
	}
	want := []envvars.EnvVar{
		{Name: "a", Value: "override-1"},
		{Name: "b", Value: "2"},
		{Name: "S_a", Value: "from-secret"},
		{Name: "S_password", Value: "s3cret"},
		{Name: "LATER_REF", Value: "$(Z)"},
		{Name: "Z", Value: "z"},
		{Name: "HOST", Value: "10.96.0.1:443"},
		{Name: "ESC", Value: "$(Z)"},
		{Name: "PW", Value: "s3cret"},
		{Name: "CMB", Value: "2"},
		{Name: "POD_IP", Value: "10.1.0.7"},
		{Name: "HOST_IP", Value: "192.168.0.2"},
		{Name: "MEM", Value: "2048"},
		{Name: "RAW", Value: "p"},
		{Name: "KUBERNETES_PORT", Value: "mine"},
	}
	for _, e := range kubernetesEnv {
		if e.Name != "KUBERNETES_PORT" {
			want = append(want, e)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	// No pod IP: the node's.
	p.Spec.Containers[0].EnvFrom = nil
	p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIPs"}}}}
	if env, err := r.Env(context.Background(), p, &p.Spec.Containers[0], nil); err != nil || env[0] != (envvars.EnvVar{Name: "POD_IP", Value: "192.168.0.2"}) {
		t.Errorf("pod IPs on the node's network: %v, %v", env, err)
	}
	wantEvents := []string{"Warning InvalidEnvironmentVariableNames Keys [bad=key] from the EnvFrom configMap ns/cm were skipped since they are considered invalid environment variable names."}
	if d := cmp.Diff(wantEvents, rec.events); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

func TestEnvServiceLinks(t *testing.T) {
	r := envvars.New(envvars.Options{Reader: envvars.ClientReader{Client: fake.NewClientset(objects()...)}})
	names := func(links *bool) []string {
		p := pod(links, v1.Container{})
		env, err := r.Env(context.Background(), p, &p.Spec.Containers[0], nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range env {
			out = append(out, e.Name)
		}
		return out
	}
	kube := []string{}
	for _, e := range kubernetesEnv {
		kube = append(kube, e.Name)
	}
	db := []string{"DB_SERVICE_HOST", "DB_SERVICE_PORT", "DB_PORT", "DB_PORT_5432_TCP", "DB_PORT_5432_TCP_PROTO", "DB_PORT_5432_TCP_PORT", "DB_PORT_5432_TCP_ADDR"}
	if d := cmp.Diff(kube, names(ptr(false))); d != "" {
		t.Errorf("links off (-want +got):\n%s", d)
	}
	if d := cmp.Diff(append(append([]string{}, db...), kube...), names(nil)); d != "" {
		t.Errorf("links unset = on (-want +got):\n%s", d)
	}
}

func TestEnvMissing(t *testing.T) {
	r := envvars.New(envvars.Options{Reader: envvars.ClientReader{Client: fake.NewClientset(objects()...)}})
	cmRef := func(name, key string) *v1.EnvVarSource {
		return &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key}}
	}
	for _, tc := range []struct {
		name     string
		c        v1.Container
		want     string
		notFound bool
	}{
		{"configMap", v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: cmRef("missing", "k")}}}, `configmaps "missing" not found`, true},
		{"key", v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: cmRef("cm", "k")}}}, "couldn't find key k in ConfigMap ns/cm", false},
		{"secret key", v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}, Key: "k"}}}}}, "couldn't find key k in Secret ns/sec", false},
		{"envFrom secret", v1.Container{EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "missing"}}}}}, `secrets "missing" not found`, true},
		{"envFrom optional object, but a missing key is not the object", v1.Container{EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "missing"}, Optional: ptr(true)}}},
			Env: []v1.EnvVar{{Name: "X", ValueFrom: cmRef("missing", "k")}}}, `configmaps "missing" not found`, true},
		{"fieldRef", v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.hostIP"}}}}}, "status.hostIP: the node's IPs are not known", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod(ptr(false), tc.c)
			_, err := r.Env(context.Background(), p, &p.Spec.Containers[0], nil)
			var ce *envvars.ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, runtime.ErrFailedPrecondition) {
				t.Fatalf("err = %v, want a *ConfigError wrapping ErrFailedPrecondition", err)
			}
			if err.Error() != tc.want {
				t.Errorf("message %q, want %q", err, tc.want)
			}
			if apierrors.IsNotFound(err) != tc.notFound {
				t.Errorf("IsNotFound = %v", !tc.notFound)
			}
		})
	}
}

func TestEnvWithoutAPIServer(t *testing.T) {
	r := envvars.New(envvars.Options{})
	p := pod(nil, v1.Container{Env: []v1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "$(A)"}}})
	env, err := r.Env(context.Background(), p, &p.Spec.Containers[0], nil)
	if d := cmp.Diff([]envvars.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "1"}}, env); err != nil || d != "" {
		t.Errorf("env: %v (-want +got):\n%s", err, d)
	}
	p = pod(nil, v1.Container{EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Optional: ptr(true)}}}})
	if _, err := r.Env(context.Background(), p, &p.Spec.Containers[0], nil); err == nil || err.Error() != "couldn't get configMap ns/cm, no kubeClient defined" {
		t.Errorf("without a reader: %v", err)
	}
}
