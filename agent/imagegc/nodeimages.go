package imagegc

import (
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/runtime"
)

// Images returns the images of the last detection, largest first (ties:
// by ID, descending), as the kubelet's image list. Nil before the first
// detection.
func (m *Manager) Images() []runtime.Image {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.images)
}

// NodeImages returns what the Node's status.images lists, as the
// kubelet: the MaxImagesInNodeStatus largest images, each with up to
// MaxNamesPerImageInNodeStatus names (its repo digests, then its repo
// tags) and its size.
func (m *Manager) NodeImages() []v1.ContainerImage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return nodeImages(m.images)
}

func nodeImages(sorted []runtime.Image) []v1.ContainerImage {
	if len(sorted) > MaxImagesInNodeStatus {
		sorted = sorted[:MaxImagesInNodeStatus]
	}
	var out []v1.ContainerImage
	for _, img := range sorted {
		names := make([]string, 0, len(img.RepoDigests)+len(img.RepoTags))
		names = append(names, img.RepoDigests...)
		names = append(names, img.RepoTags...)
		if len(names) > MaxNamesPerImageInNodeStatus {
			names = names[:MaxNamesPerImageInNodeStatus]
		}
		out = append(out, v1.ContainerImage{Names: names, SizeBytes: img.Size})
	}
	return out
}
