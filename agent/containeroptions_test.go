package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

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
