package cri

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
)

// fakeProvider prepares configMap and secret volumes as folders under
// root and gives a fixed environment.
type fakeProvider struct {
	root   string
	env    []runtime.EnvVar
	err    error
	skip   string // a volume it claims but does not prepare
	auths  []runtime.ImageAuth
	podIPs []string // what it was called with
}

func (f *fakeProvider) HandlesVolume(v *v1.Volume) bool {
	return v.ConfigMap != nil || v.Secret != nil || v.Projected != nil
}

func (f *fakeProvider) RunContainerOptions(_ context.Context, pod *v1.Pod, c *v1.Container, podIPs []string) (*runtime.RunContainerOptions, error) {
	f.podIPs = podIPs
	if f.err != nil {
		return nil, f.err
	}
	out := &runtime.RunContainerOptions{Env: f.env, Command: []string{"expanded"}, Args: []string{"a"}, Volumes: map[string]runtime.PreparedVolume{}}
	for _, v := range pod.Spec.Volumes {
		if f.HandlesVolume(&v) && v.Name != f.skip {
			out.Volumes[v.Name] = runtime.PreparedVolume{HostPath: filepath.Join(f.root, v.Name), ReadOnly: true}
		}
	}
	return out, nil
}

func (f *fakeProvider) ImagePullCredentials(context.Context, *v1.Pod, string) ([]runtime.ImageAuth, error) {
	return f.auths, nil
}

func newOfflineRuntime(t *testing.T) *Runtime {
	t.Helper()
	r, err := New(Options{Endpoint: "unix:///nonexistent.sock", VolumeRoot: t.TempDir(), NodeMemoryCapacity: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func configPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{
				{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}},
				{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			},
			Containers: []v1.Container{{
				Name: "c", Image: "img", Command: []string{"$(X)"},
				Env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{Key: "k"}}}},
				VolumeMounts: []v1.VolumeMount{
					{Name: "cfg", MountPath: "/etc/cfg"},
					{Name: "scratch", MountPath: "/scratch"},
				},
			}},
		},
	}
}

func TestCheckPodWithoutProviderRefusesAsBefore(t *testing.T) {
	r := newOfflineRuntime(t)
	err := r.checkPod(configPod())
	if !errors.Is(err, runtime.ErrInvalidArgument) {
		t.Fatalf("checkPod = %v, want ErrInvalidArgument", err)
	}
	for _, field := range []string{"spec.volumes[0] (cfg).configMap", "spec.containers[0].env[0] (X).valueFrom"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error %q does not name %s", err, field)
		}
	}
	if err, want := r.checkPod(configPod()), validatePod(configPod()); err.Error() != want.Error() {
		t.Errorf("checkPod without provider = %v, validatePod = %v", err, want)
	}
}

func TestCheckPodWithProvider(t *testing.T) {
	r := newOfflineRuntime(t)
	r.SetContainerOptionsProvider(&fakeProvider{})
	pod := configPod()
	if err := r.checkPod(pod); err != nil {
		t.Fatalf("checkPod = %v", err)
	}
	if pod.Spec.Volumes[0].ConfigMap == nil || pod.Spec.Containers[0].Env[0].ValueFrom == nil {
		t.Fatal("checkPod changed the pod")
	}
	// What the provider does not handle is still checked.
	pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: "pvc", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "x"}}})
	pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: "pvc", MountPath: "/d"})
	if err := r.checkPod(pod); !errors.Is(err, runtime.ErrInvalidArgument) || !strings.Contains(err.Error(), "persistentVolumeClaim") {
		t.Errorf("checkPod with a pvc = %v", err)
	}
	// The service-account volume is no longer reported once handled.
	sa := v1.Volume{Name: "kube-api-access-x", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}}}
	p := &v1.Pod{Spec: v1.PodSpec{Volumes: []v1.Volume{sa}}}
	if got := unsupportedFields(providerView(p, r.optionsProvider())); len(got) != 0 {
		t.Errorf("reported with a provider: %q", got)
	}
	r.SetContainerOptionsProvider(nil)
	if got := unsupportedFields(providerView(p, r.optionsProvider())); len(got) != 1 {
		t.Errorf("reported without a provider: %q", got)
	}
}

func TestRunOptionsWithProvider(t *testing.T) {
	r := newOfflineRuntime(t)
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "cfg"), 0o755); err != nil {
		t.Fatal(err)
	}
	fp := &fakeProvider{root: root, env: []runtime.EnvVar{{Name: "X", Value: "v"}}}
	r.SetContainerOptionsProvider(fp)
	pod := configPod()
	got, err := r.runOptions(context.Background(), pod, &pod.Spec.Containers[0], func() []string { return []string{"10.0.0.1"} })
	if err != nil {
		t.Fatal(err)
	}
	scratch, _ := r.emptyDirPath("u1", "scratch")
	want := &containerRunOptions{
		mounts: []*runtimeapi.Mount{
			{ContainerPath: "/etc/cfg", HostPath: filepath.Join(root, "cfg"), Readonly: true},
			{ContainerPath: "/scratch", HostPath: scratch},
		},
		envs:    []*runtimeapi.KeyValue{{Key: "X", Value: []byte("v")}},
		command: []string{"expanded"},
		args:    []string{"a"},
	}
	if d := cmp.Diff(want, got, protocmp.Transform(), cmp.AllowUnexported(containerRunOptions{})); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"10.0.0.1"}, fp.podIPs); d != "" {
		t.Errorf("podIPs (-want +got):\n%s", d)
	}

	// A provider error, or a handled volume it did not prepare, is a
	// precondition: retried, nothing created.
	fp.err = errors.New(`configmap "cm" not found`)
	if _, err := r.runOptions(context.Background(), pod, &pod.Spec.Containers[0], nil); !errors.Is(err, runtime.ErrFailedPrecondition) || !strings.Contains(err.Error(), `configmap "cm" not found`) {
		t.Errorf("provider error: %v", err)
	}
	fp.err, fp.skip = nil, "cfg"
	if _, err := r.runOptions(context.Background(), pod, &pod.Spec.Containers[0], nil); !errors.Is(err, runtime.ErrFailedPrecondition) || !strings.Contains(err.Error(), `volume "cfg"`) {
		t.Errorf("unprepared volume: %v", err)
	}
}

func TestRunOptionsWithoutProvider(t *testing.T) {
	r := newOfflineRuntime(t)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "img", Command: []string{"$(X)"}, Args: []string{"y"},
			Env: []v1.EnvVar{{Name: "X", Value: "1"}, {Name: "N", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}}},
	}
	got, err := r.runOptions(context.Background(), pod, &pod.Spec.Containers[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &containerRunOptions{
		envs:    []*runtimeapi.KeyValue{{Key: "X", Value: []byte("1")}, {Key: "N", Value: []byte("p")}},
		command: []string{"$(X)"}, // not expanded without a provider, as before
		args:    []string{"y"},
	}
	if d := cmp.Diff(want, got, protocmp.Transform(), cmp.AllowUnexported(containerRunOptions{})); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if auths, err := r.pullAuths(context.Background(), pod, "img"); err != nil || auths != nil {
		t.Errorf("pullAuths without provider = %v, %v", auths, err)
	}
	r.SetContainerOptionsProvider(&fakeProvider{auths: []runtime.ImageAuth{{Username: "u", Password: "p", ServerAddress: "reg:5000"}}})
	auths, err := r.pullAuths(context.Background(), pod, "reg:5000/img")
	if d := cmp.Diff([]*runtimeapi.AuthConfig{{Username: "u", Password: "p", ServerAddress: "reg:5000"}}, auths, protocmp.Transform()); err != nil || d != "" {
		t.Errorf("pullAuths: %v (-want +got):\n%s", err, d)
	}
}
