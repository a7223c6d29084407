package agent_test

import (
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/agent/volume"
	"github.com/podlife/podlife/runtime"
)

// providerRuntime records the container options provider the agent gives
// it.
type providerRuntime struct {
	runtime.Runtime // never called by New
	got             runtime.ContainerOptionsProvider
}

func (r *providerRuntime) SetContainerOptionsProvider(p runtime.ContainerOptionsProvider) { r.got = p }

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
