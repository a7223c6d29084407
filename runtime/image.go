package runtime

import "time"

// Image is an image present on the runtime, as its image service lists
// it (CRI ListImages).
type Image struct {
	// ID is the image's ID (the digest of its config, "sha256:…"), what
	// Container.ImageID names for the containers created from it.
	ID string
	// RepoTags are its "repo:tag" references, RepoDigests its
	// "repo@sha256:…" references.
	RepoTags    []string
	RepoDigests []string
	// Size in bytes.
	Size int64
	// Pinned: the runtime says it must never be removed (the sandbox
	// image, for one).
	Pinned bool
}

// ImageFsUsage is what the runtime says of the file system holding its
// images (CRI ImageFsInfo): where it is mounted and how much of it the
// images take. Capacity is the file system's, not the runtime's.
type ImageFsUsage struct {
	// Mountpoint of the file system (or folder) holding the images; may
	// be empty.
	Mountpoint string
	// UsedBytes is what the images take; InodesUsed, their inodes (0 if
	// the runtime does not say).
	UsedBytes  uint64
	InodesUsed uint64
	// Timestamp of the measure (zero if the runtime does not say).
	Timestamp time.Time
}
