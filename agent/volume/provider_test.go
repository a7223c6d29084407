package volume

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podlife/podlife/agent/envvars"
	"github.com/podlife/podlife/runtime"
)

func TestProviderRunContainerOptions(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"greeting": "hi"}})
	m := startManager(t, client)
	p := Provider{Volumes: m, Env: envvars.New(envvars.Options{Reader: envvars.ClientReader{Client: client}})}
	pod := testPod("u1")
	pod.Spec.EnableServiceLinks = ptr(false)
	pod.Spec.Volumes = []v1.Volume{
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}},
		{Name: "disk", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	}
	pod.Spec.Containers = []v1.Container{{
		Name: "c", Command: []string{"echo", "$(G)"},
		Env:          []v1.EnvVar{{Name: "G", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Key: "greeting"}}}},
		VolumeMounts: []v1.VolumeMount{{Name: "cfg", MountPath: "/a"}, {Name: "cfg", MountPath: "/b", SubPath: "greeting"}, {Name: "disk", MountPath: "/d"}},
	}}
	c := &pod.Spec.Containers[0]
	ro, err := p.RunContainerOptions(ctx, pod, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"echo", "hi"}, ro.Command); d != "" {
		t.Errorf("command (-want +got):\n%s", d)
	}
	if len(ro.Volumes) != 1 || !ro.Volumes["cfg"].ReadOnly {
		t.Errorf("volumes %+v (only cfg is the manager's)", ro.Volumes)
	}
	if got := readFile(t, filepath.Join(ro.Volumes["cfg"].HostPath, "greeting")); got != "hi" {
		t.Errorf("greeting file %q", got)
	}

	// A missing ConfigMap: a precondition, with the message. The manager
	// keeps the pods it was given (as the agent's pods, never changed in
	// place), so the changed spec is a new object.
	pod = pod.DeepCopy()
	c = &pod.Spec.Containers[0]
	c.Env[0].ValueFrom.ConfigMapKeyRef.Name = "missing"
	_, err = p.RunContainerOptions(ctx, pod, c, nil)
	if !errors.Is(err, runtime.ErrFailedPrecondition) || err.Error() != `configmaps "missing" not found` {
		t.Errorf("missing: %v", err)
	}
	pod = pod.DeepCopy()
	c = &pod.Spec.Containers[0]
	pod.Spec.Volumes[0].ConfigMap.Name = "missing-too"
	_, err = p.RunContainerOptions(ctx, pod, c, nil)
	if !errors.Is(err, runtime.ErrFailedPrecondition) || err.Error() != `MountVolume.SetUp failed for volume "cfg" : configmap "missing-too" not found` {
		t.Errorf("missing volume: %v", err)
	}
}

type fixedCredentials []runtime.ImageAuth

func (f fixedCredentials) ImagePullCredentials(_ context.Context, _ *v1.Pod, image string) ([]runtime.ImageAuth, error) {
	if image != "registry.example.com/app" {
		return nil, errors.New("unexpected image " + image)
	}
	return f, nil
}

func TestProviderImagePullCredentials(t *testing.T) {
	ctx := context.Background()
	if got, err := (Provider{}).ImagePullCredentials(ctx, testPod("u1"), "registry.example.com/app"); err != nil || got != nil {
		t.Errorf("without Credentials: %v, %v; want none", got, err)
	}
	want := []runtime.ImageAuth{{Username: "u", Password: "p"}}
	got, err := Provider{Credentials: fixedCredentials(want)}.ImagePullCredentials(ctx, testPod("u1"), "registry.example.com/app")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("credentials (-want +got):\n%s", d)
	}
}
