package imagegc_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/agent/imagegc"
	"github.com/podlife/podlife/runtime"
)

// The Node's status lists the 50 largest images (ties: greater ID
// first), each with up to 5 names, its digests before its tags.
func TestNodeImages(t *testing.T) {
	rt := newFakeRuntime()
	for i := range 60 {
		id := fmt.Sprintf("sha256:%02d", i)
		rt.images[id] = runtime.Image{ID: id, Size: int64(i / 2), RepoTags: []string{"t" + id}}
	}
	rt.images["sha256:many"] = runtime.Image{ID: "sha256:many", Size: 1000,
		RepoDigests: []string{"r@sha256:1", "r@sha256:2"}, RepoTags: []string{"r:1", "r:2", "r:3", "r:4"}}
	m, err := imagegc.New(imagegc.Options{Runtime: rt, Stats: newDisk(rt, 1, 0).stats})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.NodeImages(); got != nil {
		t.Fatalf("NodeImages before any detection = %v, want nil", got)
	}
	if err := m.Detect(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := m.NodeImages()
	if len(got) != imagegc.MaxImagesInNodeStatus {
		t.Fatalf("%d images listed, want %d", len(got), imagegc.MaxImagesInNodeStatus)
	}
	want := []v1.ContainerImage{
		{Names: []string{"r@sha256:1", "r@sha256:2", "r:1", "r:2", "r:3"}, SizeBytes: 1000},
		{Names: []string{"tsha256:59"}, SizeBytes: 29},
		{Names: []string{"tsha256:58"}, SizeBytes: 29},
		{Names: []string{"tsha256:57"}, SizeBytes: 28},
	}
	if d := cmp.Diff(want, got[:4]); d != "" {
		t.Errorf("first images (-want +got):\n%s", d)
	}
	if last := got[49]; last.SizeBytes != 5 || last.Names[0] != "tsha256:11" {
		t.Errorf("last image listed = %+v, want tsha256:11 of 5 bytes", last)
	}
}
