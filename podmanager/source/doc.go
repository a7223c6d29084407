// Package source feeds the pod manager: pod sources deliver full snapshots
// of the pods they want on the node, and Config merges them into the
// incremental operations an agent's sync loop consumes, the way the
// kubelet's PodConfig does.
//
// # Wiring
//
//	cfg, _ := source.NewConfig(source.ConfigOptions{Logger: log})
//	file, _ := source.NewFile(cfg.Sink(podmanager.FileSource), source.FileOptions{Path: "/etc/podlife/manifests", NodeName: node})
//	api, _ := source.NewAPI(cfg.Sink(podmanager.APISource), source.APIOptions{Client: client, NodeName: node})
//	go file.Run(ctx) // the caller owns every Run goroutine and waits for it
//	go api.Run(ctx)
//	for u := range cfg.Updates() { ... } // ADD, UPDATE, DELETE, REMOVE, RECONCILE
//
// Register every sink before running any source: Config.Ready (and
// SeenAllSources) waits for a first snapshot from each registered source.
// Constructors start nothing; each source's Run blocks until its context is
// done. Config itself has no goroutine: Sink.Set merges on the source's
// goroutine and blocks while the Updates channel (capacity 50) is full.
//
// # Merge
//
// Each source's last snapshot is kept by UID. A new snapshot is diffed
// against it:
//
//   - a new UID is ADD; it is stamped with kubernetes.io/config.source and,
//     if absent, kubernetes.io/config.seen (the Config's clock);
//   - a semantic change (spec, labels, deletion timestamp or grace period,
//     annotations other than config.source, config.mirror and config.seen)
//     is DELETE when the deletion timestamp is set and UPDATE otherwise;
//   - a change of status alone is RECONCILE;
//   - a UID that is gone is REMOVE.
//
// The updates of one snapshot are delivered in the order REMOVE, ADD,
// UPDATE, DELETE, an empty ADD on the source's first snapshot if it added,
// updated and deleted nothing (the readiness signal), then RECONCILE. Two
// pods of one snapshot with the same full name (or UID) are a conflict: the
// first is kept, the later one dropped and reported as ErrDuplicateFullName.
//
// A pod is never modified after it has been emitted: a changed pod is a new
// object (carrying the config.seen of the first sight), so consumers may keep
// the pointers they receive, read-only.
//
// # Sources
//
//   - File: a folder of manifests, watched with fsnotify and re-read every 20
//     s; static pods.
//   - HTTP: a URL polled every 20 s returning a Pod or a PodList; static pods.
//   - API: the pods bound to the node (spec.nodeName field selector), mirror
//     pods included, through a client-go reflector.
//   - Channel: snapshots pushed by the embedding program.
//
// Static pods (file, http) are defaulted like the kubelet does it (see
// ApplyStaticPodDefaults): their UID is derived from the manifest content,
// node name, source and file path or URL, so editing a manifest that has no
// metadata.uid creates a new pod (REMOVE of the old UID, ADD of the new one),
// and so does renaming its file.
//
// # Bad input
//
// A manifest that does not decode (ErrDecode), is not a v1 Pod (ErrNotPod)
// or fails ValidatePod (ErrInvalidPod) is skipped; the rest of the source
// keeps going. A file or pod that was valid and becomes invalid keeps its
// last good pod. Every rejection is logged with its origin (file path, URL
// or pod full name), counted (Errors() on each source and on Config) and
// passed to the OnError option as an *Error. A rejection is reported again
// on every re-read until the input is fixed. Decoding never panics
// (FuzzDecodeManifest).
package source
