package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/agent/envvars"
	"github.com/podlife/podlife/agent/node"
	"github.com/podlife/podlife/agent/volume"
	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/cri"
	"github.com/podlife/podlife/runtime/fakecri"
)

// providerRuntime records the container options provider the agent gives
// it.
type providerRuntime struct {
	runtime.Runtime // never called by New
	got             runtime.ContainerOptionsProvider
}

func (r *providerRuntime) SetContainerOptionsProvider(p runtime.ContainerOptionsProvider) { r.got = p }

// recordingRuntime is a CRI runtime that records the container options
// provider the agent gives it, and takes it.
type recordingRuntime struct {
	*cri.Runtime
	got runtime.ContainerOptionsProvider // set by New, before Run
}

func (r *recordingRuntime) SetContainerOptionsProvider(p runtime.ContainerOptionsProvider) {
	r.got = p
	r.Runtime.SetContainerOptionsProvider(p)
}

// With a cluster, a runtime that takes a container options provider gets
// the volume manager and envvars; without one, or with
// SkipContainerOptions, it gets none; bad volume options are refused.
func TestClusterContainerOptions(t *testing.T) {
	opts := func(rt runtime.Runtime, c *agent.Cluster) agent.Options {
		return agent.Options{Runtime: rt, NodeName: "n", ManifestPath: t.TempDir(), Cluster: c}
	}
	rt := &providerRuntime{}
	if _, err := agent.New(opts(rt, &agent.Cluster{Client: fake.NewClientset(), SkipNode: true, Volumes: volume.Options{Root: t.TempDir()}})); err != nil {
		t.Fatal(err)
	}
	if _, ok := rt.got.(volume.Provider); !ok {
		t.Errorf("provider %T, want volume.Provider", rt.got)
	}
	skip := &providerRuntime{}
	if _, err := agent.New(opts(skip, &agent.Cluster{Client: fake.NewClientset(), SkipNode: true, SkipContainerOptions: true})); err != nil {
		t.Fatal(err)
	}
	none := &providerRuntime{}
	if _, err := agent.New(opts(none, nil)); err != nil {
		t.Fatal(err)
	}
	if skip.got != nil || none.got != nil {
		t.Errorf("provider given with SkipContainerOptions (%v) or without a cluster (%v)", skip.got, none.got)
	}
	_, err := agent.New(opts(&providerRuntime{}, &agent.Cluster{Client: fake.NewClientset(), SkipNode: true, Volumes: volume.Options{Root: "relative"}}))
	if err == nil || !strings.Contains(err.Error(), "Root must be an absolute path") {
		t.Errorf("relative root: %v", err)
	}
}

// A resourceFieldRef to a limit the container does not set reads the
// node's allocatable, in an env var and in a downwardAPI volume alike
// (before, the agent gave neither the node's figures: both read 0).
func TestClusterResourceFieldRefDefaultsToAllocatable(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	rt := &recordingRuntime{Runtime: newRuntime(t, endpoint)}
	node := node.Options{Capacity: v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse("3"),
		v1.ResourceMemory:           resource.MustParse("5Gi"),
		v1.ResourceEphemeralStorage: resource.MustParse("7Gi"),
	}}
	a, err := agent.New(agent.Options{Runtime: rt, NodeName: "n", ManifestPath: t.TempDir(),
		Cluster: &agent.Cluster{Client: fake.NewClientset(), Node: node, Volumes: volume.Options{Root: t.TempDir()}}})
	if err != nil {
		t.Fatal(err)
	}
	ref := func(res string) *v1.ResourceFieldSelector {
		return &v1.ResourceFieldSelector{ContainerName: "c", Resource: res}
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"}, Spec: v1.PodSpec{
		Volumes: []v1.Volume{{Name: "podinfo", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "cpu_limit", ResourceFieldRef: ref("limits.cpu")},
			{Path: "memory_limit", ResourceFieldRef: ref("limits.memory")},
		}}}}},
		Containers: []v1.Container{{Name: "c",
			Env: []v1.EnvVar{
				{Name: "CPU_LIMIT", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: ref("limits.cpu")}},
				{Name: "MEMORY_LIMIT", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: ref("limits.memory")}},
				{Name: "STORAGE_LIMIT", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: ref("limits.ephemeral-storage")}},
			},
			VolumeMounts: []v1.VolumeMount{{Name: "podinfo", MountPath: "/etc/podinfo"}},
		}},
	}}
	// The service variables come from the agent's watch of the Services:
	// before it has listed them, the options cannot be made (the kubelet's
	// error, retried by the sync); once the agent runs, they can.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := rt.got.RunContainerOptions(ctx, pod, &pod.Spec.Containers[0], nil); !errors.Is(err, envvars.ErrServicesNotSynced) {
		t.Fatalf("options before the agent runs: %v, want %v", err, envvars.ErrServicesNotSynced)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	var out *runtime.RunContainerOptions
	podworkertest.WaitFor(t, waitTimeout, "container options", func() bool {
		out, err = rt.got.RunContainerOptions(ctx, pod, &pod.Spec.Containers[0], nil)
		return err == nil
	})
	env := map[string]string{}
	for _, e := range out.Env {
		env[e.Name] = e.Value
	}
	for name, want := range map[string]string{"CPU_LIMIT": "3", "MEMORY_LIMIT": "5368709120", "STORAGE_LIMIT": "7516192768"} {
		if env[name] != want {
			t.Errorf("env %s = %q, want %q", name, env[name], want)
		}
	}
	dir := out.Volumes["podinfo"].HostPath
	for file, want := range map[string]string{"cpu_limit": "3", "memory_limit": "5368709120"} {
		if b, err := os.ReadFile(filepath.Join(dir, file)); err != nil || string(b) != want {
			t.Errorf("file %s = %q (%v), want %q", file, b, err, want)
		}
	}
}

// staticServices is an envvars.ServiceReader of fixed Services, by
// namespace, that counts its calls.
type staticServices struct {
	byNamespace map[string][]*v1.Service
	calls       atomic.Int64
}

func (s *staticServices) Services(_ context.Context, namespace string) ([]*v1.Service, error) {
	s.calls.Add(1)
	return s.byNamespace[namespace], nil
}

// With Cluster.Services (a watch the caller runs and shares between
// agents), a container's service variables come from it: the agent neither
// lists nor watches the Services with its own client, and still reads the
// ConfigMaps with it.
func TestClusterSharedServices(t *testing.T) {
	srv, endpoint := startFakeCRI(t, fakecri.Options{})
	svc := func(ns, name, ip string, port int32) *v1.Service {
		return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1.ServiceSpec{ClusterIP: ip, Ports: []v1.ServicePort{{Port: port}}}}
	}
	shared := &staticServices{byNamespace: map[string][]*v1.Service{
		"default": {svc("default", "kubernetes", "10.96.0.1", 443)},
		"app":     {svc("app", "db", "10.96.0.5", 5432)},
	}}
	// The node's own API holds no Service: a variable of one can only come
	// from the shared reader.
	client := fake.NewClientset(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "settings"}, Data: map[string]string{"mode": "fast"}})
	var mu sync.Mutex
	requests := map[string]int{}
	client.PrependReactor("*", "services", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		requests[a.GetVerb()]++
		return false, nil, nil
	})
	client.PrependWatchReactor("services", func(k8stesting.Action) (bool, watch.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		requests["watch"]++
		return false, nil, nil
	})
	ra := startAgentWith(t, endpoint, "", func(o *agent.Options) {
		o.ManifestPath = ""
		o.Cluster = &agent.Cluster{Client: client, SkipNode: true, Services: shared, Volumes: volume.Options{Root: t.TempDir()}}
	})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web", UID: "uid-web"}, Spec: v1.PodSpec{
		NodeName: "node1",
		Containers: []v1.Container{{Name: "main", Image: testImage, Env: []v1.EnvVar{{Name: "MODE", ValueFrom: &v1.EnvVarSource{
			ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "settings"}, Key: "mode"}}}}}},
	}}
	if _, err := client.CoreV1().Pods("app").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ra, pod.UID)
	ids := runningContainerIDs(runtimePods(t, ra.rt, false)[pod.UID])
	if len(ids) != 1 {
		t.Fatalf("running containers %v, want 1", ids)
	}
	cfg, err := srv.ContainerConfig(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range cfg.GetEnvs() {
		env[kv.GetKey()] = string(kv.GetValue())
	}
	for name, want := range map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "DB_SERVICE_HOST": "10.96.0.5", "DB_SERVICE_PORT": "5432", "MODE": "fast"} {
		if env[name] != want {
			t.Errorf("env %s = %q, want %q", name, env[name], want)
		}
	}
	if shared.calls.Load() == 0 {
		t.Error("the shared Services were never read")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(requests) != 0 {
		t.Errorf("requests for Services with the node's client: %v, want none", requests)
	}
}
