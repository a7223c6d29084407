// Package gc is container garbage collection, as the kubelet's
// containerGC (pkg/kubelet/kuberuntime/kuberuntime_gc.go): it removes the
// dead containers and sandboxes a node would otherwise pile up, and the
// folders of pods that are gone.
//
// A Manager passes once at Run, then every Options.Period (default 1m,
// the kubelet's ContainerGCPeriod). A pass lists every container and
// sandbox of the runtime (Runtime.GetPods(ctx, true)) and asks the pod
// workers (PodState, *podworker.Workers) what each pod may lose:
//
//   - A pod that is still terminating (its containers are being stopped)
//     loses nothing.
//   - A pod whose content may go (deleted and terminated, evicted, or
//     unknown to the workers once the sources are ready) loses every
//     container that does not run and every sandbox that is not ready
//     and holds no container.
//   - Any other pod keeps, of each container (per pod UID and container
//     name), the Policy.MaxPerPodContainer newest dead instances
//     (default 1, the kubelet's --maximum-dead-containers-per-container:
//     the newest dead instance stays for kubectl logs --previous and its
//     exit code); older ones that have been dead for Policy.MinAge
//     (default 0, --minimum-container-ttl-duration) go. Then, if
//     Policy.MaxContainers is not negative (default -1,
//     --maximum-dead-containers), the node keeps at most that many dead
//     containers: first an equal share per container (at least one),
//     then the oldest go. Of its sandboxes it keeps the newest, ready or
//     not; older ones that are not ready and hold no container go.
//
// "Newest" is the highest attempt (restart count), then the latest
// creation. A container in an unknown state is stopped before it is
// removed. Runtime.RemoveContainer removes a container's log files with
// it (runtime/cri: the CRI log, its rotated files and the
// termination-message file); Runtime.RemoveSandbox stops a sandbox and
// removes it.
//
// With the sources ready (Options.SourcesReady) a pass also sweeps
// Options.PodFolderRoots (runtime/cri's VolumeRoot with each pod's logs
// and emptyDirs, agent/volume's Root with its tmpfs volumes): a folder
// ROOT/UID of a pod that no worker knows and of which the runtime holds
// nothing (after this pass's removals) is removed, after every mount
// under it was unmounted, deepest first. The removal never crosses into
// another file system: a mount that cannot be unmounted, or that
// appeared meanwhile, keeps the folder for the next sweep. Names that
// begin with a dot (runtime/cri's trash) are never touched. Run makes
// this first sweep as soon as the sources are ready (checked every
// second), not a Period later.
//
// A root is swept only while this Manager is the only one using it: two
// agents with the same roots (the defaults, on one machine or in one
// process) each see the other's pods as unknown. Every Manager holds a
// shared flock(2) on ROOT/.podlife-gc-users.lock from Run's start to its
// end (Close), and sweeps a root only when it can trade it for an
// exclusive one (under ROOT/.podlife-gc-sweep.lock, one sweeper at a
// time); a shared root is logged once and left alone. An agent that runs
// no container GC takes no lock and is not protected; give each agent
// its own roots. Off Linux nothing is swept.
//
// # Cost
//
// A pass is one listing of the runtime (in package agent, the relister's
// last one: no runtime call, no wait), two or three
// questions to the pod workers per pod (a shard lock each), a sort of
// each container's dead instances, and one or two runtime calls per removal
// (runtime/cri: the container's status for its files, and the removal),
// Options.Workers at once (default 1). The sweep reads each root and,
// for an orphaned folder, the mount table (three questions to the pod
// workers per folder); docs/benchmarks.md has its time at 2,000 and
// 100,000 pods.
//
// # Failures
//
// A removal that fails is tried again at the next pass, a Period later;
// its first failure in a row is logged as an error, the next ones at
// V(4), its success at V(2). A failed listing ends the pass (logged
// likewise). Nothing is retried within a pass, so a runtime that refuses
// every removal costs one call per object per Period and one log line
// per object. The time of the pass comes from Options.Clock: a clock set
// back or forward only changes which containers are older than MinAge
// (with MinAge 0, none is ever too young).
//
// # Compared with the kubelet
//
// Same policy, defaults, order and flags. Differences: nothing of a pod
// that is still terminating is touched (the kubelet applies
// MaxPerPodContainer to it); a container created but not yet started is
// never counted as dead for a live pod (the kubelet may remove an
// instance in that state, or the previous dead one for it); the pod log
// directories are the pods' folders, swept with them (the kubelet's
// /var/log/pods/NS_NAME_UID, removed only for deleted pods, and its
// orphaned pod directories, which it refuses to remove while volumes are
// mounted, where this package unmounts them); a sandbox is judged empty
// after this pass's container removals, without a second listing; a
// listing failure is logged, and evented (Options.OnListFailure; the
// agent records ContainerGCFailed on the Node), once per row of failures,
// where the kubelet does both every minute.
// The restart of a container (runtime/cri) removes its older dead
// instances at once, so between passes a crash-looping container holds
// at most its newest instance and one dead one; the kubelet keeps them
// all until its next pass.
//
// # Metrics
//
// With Options.Registerer (names prefixed with Options.MetricsNamespace,
// default "kubelet"): container_gc_removals_total{object} and
// container_gc_failures_total{object} (object: container, sandbox,
// pod_folder), container_gc_duration_seconds. The kubelet has none for
// container GC; the runtime's operation metrics (runtime/cri) count the
// remove_container, stop_podsandbox and remove_podsandbox calls.
package gc
