package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/runtime/fakecri"
)

// An agent on a CRI runtime has an image manager: the eviction manager's
// DeleteUnusedImages removes the images no container uses and keeps the
// running pod's; the Node's image list follows.
func TestAgentImageGC(t *testing.T) {
	srv, endpoint := startFakeCRI(t, fakecri.Options{Images: []string{"unused-a:1", "unused-b:1"}})
	dir := t.TempDir()
	writeManifest(t, dir, "web", manifest("web", 1))
	ra := startAgentWith(t, endpoint, dir, func(o *agent.Options) {
		o.ImageMinimumGCAge = -1
		o.ImageGCHighThresholdPercent = 100 // only on demand
	})
	if ra.ImageGC() == nil {
		t.Fatal("no image manager on a CRI runtime")
	}
	waitRunning(t, ra, ra.podUID(t, "web"))
	freed, err := ra.ImageGC().DeleteUnusedImages(context.Background())
	if err != nil || freed != 2<<20 {
		t.Fatalf("DeleteUnusedImages = %d, %v; want the two unused images (2 MiB)", freed, err)
	}
	if srv.HasImage("unused-a:1") || srv.HasImage("unused-b:1") || !srv.HasImage(testImage) {
		t.Errorf("after DeleteUnusedImages: a %v, b %v (want gone), the pod's image %v (want kept)",
			srv.HasImage("unused-a:1"), srv.HasImage("unused-b:1"), srv.HasImage(testImage))
	}
	if im := ra.ImageGC().NodeImages(); len(im) != 1 || im[0].Names[len(im[0].Names)-1] != testImage {
		t.Errorf("node images = %+v, want the pod's image only", im)
	}
}

// ImageGCHighThresholdPercent negative: no image manager.
func TestAgentWithoutImageGC(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	ra := startAgentWith(t, endpoint, t.TempDir(), func(o *agent.Options) { o.ImageGCHighThresholdPercent = -1 })
	if ra.ImageGC() != nil {
		t.Error("an image manager with ImageGCHighThresholdPercent -1")
	}
}

// Bad image GC options fail agent.New with the image GC's error.
func TestAgentImageGCBadOptions(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	rt := newRuntime(t, endpoint)
	reg := prometheus.NewRegistry()
	opts := agent.Options{Runtime: rt, NodeName: "node1", Registerer: reg, ImageGCHighThresholdPercent: 101}
	if _, err := agent.New(opts); err == nil || !strings.Contains(err.Error(), "HighThresholdPercent 101") {
		t.Fatalf("agent.New with ImageGCHighThresholdPercent 101 = %v, want the image GC's error", err)
	}
}
