package cri_test

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/fakecri"
)

// What the adapter cannot honour is refused with an error naming the
// field, never dropped without a word.
func TestUnsupportedFieldsRefused(t *testing.T) {
	_, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	for _, tc := range []struct {
		field string
		edit  func(*v1.Container)
	}{
		{"spec.containers[0].envFrom", func(c *v1.Container) { c.EnvFrom = []v1.EnvFromSource{{}} }},
		{"spec.containers[0].env[0] (PASSWORD).valueFrom", func(c *v1.Container) {
			c.Env = []v1.EnvVar{{Name: "PASSWORD", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{Key: "p"}}}}
		}},
		{"spec.containers[0].lifecycle.preStop.tcpSocket", func(c *v1.Container) {
			c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(80)}}}
		}},
		{"spec.containers[0].lifecycle.postStart: a handler needs one action", func(c *v1.Container) {
			c.Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{}}
		}},
		{"spec.containers[0].lifecycle.postStart.httpGet.port", func(c *v1.Container) {
			c.Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("web")}}}
		}},
		{"spec.containers[0].lifecycle.preStop.exec.command", func(c *v1.Container) {
			c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{}}}
		}},
	} {
		pod := testPod("f", v1.RestartPolicyAlways, v1.Container{Name: "c"})
		tc.edit(&pod.Spec.Containers[0])
		err := rt.SyncPod(ctxT(t), pod, nil)
		if !errors.Is(err, runtime.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: %v, want ErrInvalidArgument naming the field", tc.field, err)
		}
	}
	// The downward API and resources are honoured.
	pod := testPod("ok", v1.RestartPolicyAlways, v1.Container{Name: "c", Env: []v1.EnvVar{
		{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}})
	if err := rt.SyncPod(ctxT(t), pod, nil); err != nil {
		t.Fatal(err)
	}
}
