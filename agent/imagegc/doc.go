// Package imagegc garbage collects a container runtime's unused images, as
// the kubelet's image GC manager (pkg/kubelet/images, realImageGCManager),
// and keeps the image list the Node's status shows (status.images).
//
// A Manager detects the images at Run, every Options.DetectPeriod (default
// 5 min, as the kubelet) and at each collection pass: it lists the images
// (CRI ListImages) and every container, running or exited, and sandbox
// (Runtime.GetPods(all)), and keeps a record of each image: when it was
// first seen, when it was last seen in use, its size, whether it is
// pinned. An image is in use when a container was created from it (its
// ImageID, or the reference it names). In between, every
// Options.ImageListPeriod (default 30 s, the kubelet's image cache
// refresh) it lists the images alone, for the Node's status.
//
// A collection pass runs at Run and every Options.GCPeriod (default 5 min,
// the kubelet's ImageGCPeriod):
//
//  1. with Options.MaxAge (imageMaximumGCAge, default 0: off), once the
//     Manager has run MaxAge, unused images not used for longer than
//     MaxAge are removed, whatever the usage;
//  2. the image file system's capacity and availability are read
//     (Options.Stats; by default CRIStats: the runtime's ImageFsInfo names
//     the mount point, statfs gives its size and what is free, as the
//     kubelet's cadvisor does);
//  3. if the usage, 100 - available*100/capacity, is at or above
//     Options.HighThresholdPercent (imageGCHighThresholdPercent, 85), the
//     images are removed in eviction order until
//     capacity*(100-LowThresholdPercent)/100 - available bytes
//     (imageGCLowThresholdPercent, 80) are freed. Eviction order: least
//     recently used first (never-used images before all), then first seen
//     first. Never removed: an image in use, an image the runtime pins
//     (containerd pins its sandbox image), an image named in
//     Options.PinnedImages, an image first seen less than Options.MinAge
//     ago (imageMinimumGCAge, 2 min: it may have just been pulled for a
//     container about to start).
//
// HighThresholdPercent 100 turns the periodic pass off (the kubelet's
// "Disable image GC"); detection and DeleteUnusedImages go on.
//
// DeleteUnusedImages removes every image the pass may remove, whatever the
// usage, and returns the bytes freed: what an eviction manager calls to
// reclaim the image file system under disk pressure (the kubelet's
// eviction manager calls its image GC's DeleteUnusedImages).
//
// NodeImages is status.images as the kubelet writes it: the
// MaxImagesInNodeStatus (50) largest images of the last detection (ties:
// the greater ID first), each with up to MaxNamesPerImageInNodeStatus (5)
// names, its repo digests first, then its repo tags, and its size.
// agent/node takes it through node.Options.Images.
//
// # Cost
//
// A detection is one ListImages and one listing of all containers and
// sandboxes; a pass adds one of each, the stats (one ImageFsInfo and one
// statfs) and one RemoveImage per image removed. Sorting the eviction
// order is O(n log n) in the images (docs/benchmarks.md).
//
// # Failures
//
// Passes never overlap (a call waits for the pass under way). Nothing is
// retried within a pass: an image the runtime refuses to remove is tried
// again at the next one. Logs and events, as the kubelet's but never a
// line per pass for the same failure: the first failed pass in a row is
// logged "Image garbage collection failed once. Stats initialization may
// not have completed yet", the second "Image garbage collection failed
// multiple times in a row" with a Warning ImageGCFailed event on the Node,
// later ones at V(4); success after failures logs "Image garbage
// collection succeeded" (V(1)). An image whose removal failed is logged
// again only at V(4). FreeDiskSpaceFailed ("Failed to garbage collect
// required amount of images. Attempted to free N bytes, but only found M
// bytes eligible to free.") and InvalidDiskCapacity (capacity 0: nothing
// is removed) are recorded once per row of failed passes. A runtime that
// does not serve ImageFsInfo (ErrUnsupported) turns the periodic pass off,
// said once, and back on, said once, when it answers; age-based removal
// and DeleteUnusedImages do not need it. Available above capacity counts
// as no usage. A clock set back leaves no record in the future: an image
// seen "later than now" counts as first seen now (it waits MinAge again),
// and one used "later than now" as used now.
//
// # Compared with the kubelet
//
// Same policy, order, defaults, names, messages and metric. Differences:
// detection and the image list are one 30 s loop (the kubelet refreshes
// the list every 30 s and the records every 5 min); an image is also in
// use when a container names one of its references (the kubelet matches
// the image ID only); MaxAge counts a never-used image from its first
// sight (the kubelet from the zero time, which after its MaxAge start-up
// wait comes to the same); failures are logged and evented once per row,
// not at every pass; the thresholds' zero values mean their defaults
// (give 1 for "always", as a percentage); images are not indexed by
// runtime handler (RuntimeClassInImageCriAPI); the stats are pluggable
// (Options.Stats) for images kept elsewhere than a local file system.
//
// # Metrics
//
// With Options.Registerer (names prefixed with Options.MetricsNamespace,
// default "kubelet"): image_garbage_collected_total{reason="age"|"space"},
// the kubelet's.
package imagegc
