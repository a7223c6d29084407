package runtime

import (
	"encoding/json"
	"hash/fnv"

	v1 "k8s.io/api/core/v1"
)

// HashContainer returns a hash of a container's spec. A runtime records it on
// the containers it creates (Container.Hash, ContainerStatus.Hash); a
// container whose hash differs from its spec's was created from an older spec.
//
// The hash covers the whole v1.Container, in its JSON form, which is stable for
// a given API version.
func HashContainer(c *v1.Container) uint64 {
	h := fnv.New64a()
	b, err := json.Marshal(c)
	if err != nil {
		// v1.Container always marshals; keep the function total anyway.
		return 0
	}
	_, _ = h.Write(b)
	return h.Sum64()
}
