package imagegc_test

import (
	"context"
	"fmt"

	"github.com/podlife/podlife/agent/imagegc"
	"github.com/podlife/podlife/runtime"
)

// A Manager on a runtime whose images fill 90 % of a 1000-byte file
// system: a pass removes the unused images, never-used and oldest first,
// down to 80 %; the image in use stays.
func Example() {
	rt := newFakeRuntime(
		runtime.Image{ID: "sha256:old", Size: 150, RepoTags: []string{"docker.io/library/old:1"}},
		runtime.Image{ID: "sha256:web", Size: 750, RepoTags: []string{"docker.io/library/web:1"}},
	)
	rt.use("web", "sha256:web")
	m, err := imagegc.New(imagegc.Options{
		Runtime: rt,
		Stats: func(context.Context) (imagegc.FsStats, error) {
			return imagegc.FsStats{CapacityBytes: 1000, AvailableBytes: 1000 - rt.used()}, nil
		},
		MinAge: -1, // no minimum age, for the example
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := m.GarbageCollect(context.Background()); err != nil {
		fmt.Println(err)
	}
	for _, im := range m.NodeImages() {
		fmt.Println(im.Names, im.SizeBytes)
	}
	// Output:
	// [docker.io/library/web:1] 750
}
