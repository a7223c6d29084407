// Package agent composes podlife's parts into the pod lifecycle half of a
// node agent: the kubelet's sync loop, and nothing more.
//
//	sources ──► source.Config ──► handlers ──► podmanager.Manager
//	(manifest folder,   ADD/UPDATE/   │  admission (AdmitHandler)
//	 HTTP, API, ...)    DELETE/...    ▼
//	                              podworker.Workers ──► Syncer ──► runtime.Runtime
//	runtime.Relister ──► Cache ─────────▲    ▲                    (cri: containerd,
//	      └─ container events ──────────┘    │                     CRI-O, fakecri)
//	housekeeping (every 2 s) ────────────────┘  metrics, mirror pods, statuses
//
// # Feeding side
//
// Config updates are applied on one goroutine, the sync loop:
//
//   - ADD: pods are sorted by creation time and added to the pod manager;
//     a mirror pod becomes an update of its static pod; any other pod is
//     admitted by Options.AdmitHandlers in order (the first rejection
//     wins). A rejected pod gets a Failed status ("Pod was rejected: ...")
//     and never reaches a pod worker; an admitted one is sent as
//     SyncPodCreate.
//   - UPDATE and DELETE (a graceful deletion) are sent as SyncPodUpdate.
//   - REMOVE forgets the pod and kills it, once every source is ready
//     (before that, housekeeping terminates it as an orphan). A removed mirror
//     pod becomes an update of its static pod, so that it is created again.
//   - RECONCILE stores the new status, and sends SyncPodSync for a pod whose
//     Ready condition no longer agrees with its readiness gates (another
//     component set a gate's condition), as the kubelet.
//
// The relister wakes the worker of every pod whose containers changed. A pod
// worker waiting for a runtime status newer than its last sync kicks it
// (Options.RelistKickInterval), so no step of a pod waits a whole relist
// period. The terminated sync waits for none: it gets the status that the
// terminating sync read after its kill (what the kubelet's TODOs in
// syncTerminatingPod and the pod worker ask for), so that a pod finishes as
// soon as its containers stopped, even when relists take seconds on a node
// with many pods.
//
// # The Syncer
//
// SyncPod keeps a static pod's mirror pod in line (Options.MirrorClient),
// publishes the status derived from the runtime, and runs the pod through
// runtime.Runtime.SyncPod; it reports isTerminal once the restart policy says
// the pod is done, or once the pod is past its activeDeadlineSeconds (phase
// Failed, reason DeadlineExceeded, kept in every later status; housekeeping
// syncs such a pod as soon as its deadline passes). Right after SyncPod
// started containers it reads the pod's status again and publishes it, so
// that the pod shows Running without waiting for the next relist. An update
// that only adds an ephemeral container (kubectl debug, through the
// pods/ephemeralcontainers subresource) is a spec change like any other: the
// pod's worker syncs it, the runtime starts the container, and its status
// shows in ephemeralContainerStatuses right after that sync; it counts for
// neither the pod's phase nor its readiness, and is stopped with the pod. SyncTerminatingPod kills with the worker's grace period,
// applies the kill's PodStatusFunc, and fails (to be retried by the pod
// worker) if anything still runs afterwards. SyncTerminatingRuntimePod kills
// a pod known only to the runtime with a grace period of 1 s and removes
// it. SyncTerminatedPod removes the pod's containers and sandboxes and
// publishes the final status. The agent never retries a Syncer call itself:
// the pod workers do, with back-off, in every state.
//
// # Housekeeping
//
// Every Options.HousekeepingInterval, once every source has sent its first
// snapshot, Housekeeping runs the kubelet's HandlePodCleanups: SyncKnownPods
// with the desired pods (undesired ones are driven to termination, finished
// ones forgotten), a forced relist and a fresh runtime listing, then
//
//   - orphaned mirror pods are deleted, unless their static pod is still
//     terminating;
//   - desired and active pods are counted;
//   - active pods no worker knows (recreated with the same UID while they
//     terminated) are started again and counted as restarts;
//   - terminal pods being deleted that no worker knows are sent a kill, so
//     that they finish;
//   - runtime pods no worker knows are terminated with a grace period of 1 s
//     and counted as orphaned runtime pods;
//   - the dead remains (exited containers, stopped sandboxes) of pods that
//     no worker knows and that are not desired are removed, a few per pass:
//     the kubelet's container garbage collection, reduced to what podlife
//     needs;
//   - kubelet_working_pods is set for all 15 label combinations.
//
// # Statuses
//
// Every sync derives the pod's status from the runtime's with package
// agent/podstatus (the kubelet's generateAPIPodStatus: container, init
// container and ephemeral container statuses, phase, conditions, IPs, QoS
// class), on top of the
// status last published for the pod, so that startTime and the conditions'
// lastTransitionTime stay put while nothing changes. Options.NodeIPs gives
// the hostIPs. Statuses go to a StatusReporter. The agent always keeps them in a
// MemoryStatusReporter (Agent.StatusReporter), and also hands them to
// the cluster's status manager (Options.Cluster) or to the reporter
// Options.StatusReporter builds. Every reporter must keep the rule that a
// terminal phase is never published while the pod could still have
// running containers (MergeStatus). Unlike the kubelet (kubernetes#116484),
// a terminated static pod gets a terminal phase too.
//
// # A node of a cluster
//
// With Options.Cluster the agent is a node of a Kubernetes cluster, with a
// kubelet's credentials and rights: agent/node registers (or adopts) the
// Node, renews its Lease every 10 s and reports its status (Ready from the
// runtime); the API source runs the pods bound to the node; mirror pods
// are created for static pods; agent/status writes pod statuses in the
// background (one PATCH each, coalesced, never blocking a pod worker,
// dropping pods the API says are gone) and deletes a pod being deleted
// once it finished; agent/events records the kubelet's events (Killing,
// BackOff, FailedSync from the agent; a runtime that records its own with
// the same recorder, as runtime/cri does, records Started right after each
// start; for any other runtime the agent records Started when a relist
// sees a container running; Agent.EventRecorder). The Node's InternalIP
// becomes the pods' hostIP.
//
// A container the runtime could not start (a *runtime.StartError in
// SyncPod's error: ErrImagePull, ImagePullBackOff,
// CreateContainerConfigError, RunContainerError, ...) is Waiting with that
// reason and message in the pod's status, published right after the sync
// that failed, as a crash-loop back-off is Waiting CrashLoopBackOff (which
// wins); a later sync that starts it, or no longer tries to, clears it.
// Such a sync records no FailedSync event: the runtime recorded the
// kubelet's events for it.
//
// # Container logs
//
// The containers' log files are rotated as the kubelet's container log
// manager does (agent/logrotate): every 10 s, a running container's log
// that has reached Options.ContainerLogMaxSize (10 MiB) is renamed and
// reopened by the runtime, the older rotated files gzipped, at most
// Options.ContainerLogMaxFiles (5) kept. It needs a runtime that gives a
// container's log file and reopens it (runtime/cri does); a negative
// ContainerLogMaxSize turns it off. Agent.LogRotation returns it.
//
// # Container garbage collection
//
// Dead containers and sandboxes are removed as the kubelet's container
// GC does (agent/gc): every Options.ContainerGCPeriod (1m), with
// Options.ContainerGCPolicy (the kubelet's MinAge 0, one dead instance
// kept per container, no node cap); everything dead of deleted pods,
// nothing of a terminating pod. It takes the relister's last listing
// of the runtime and asks the pod workers what may go, and it sweeps the
// folders of pods that are gone (the runtime's VolumeRoot, the volume
// manager's Root; mounts unmounted first) once the sources are ready and
// a first housekeeping pass has told the workers the desired pods. It
// needs a runtime that removes containers and sandboxes one by one
// (runtime/cri does); a negative ContainerGCPeriod turns it off.
// Agent.ContainerGC returns it.
// # Images
//
// Unused images are garbage collected as the kubelet's image GC manager
// does (agent/imagegc): every 5 min, when the image file system is used at
// Options.ImageGCHighThresholdPercent (85) or more, images no container
// uses, not pinned and older than Options.ImageMinimumGCAge (2 min) are
// removed, least recently used first, down to ImageGCLowThresholdPercent
// (80); Options.ImageMaximumGCAge removes images unused that long. With a
// cluster, the Node's status.images lists the 50 largest images. It needs
// a runtime that lists and removes images and tells its image file
// system's usage (runtime/cri does; Options.ImageFsStats otherwise); a
// negative ImageGCHighThresholdPercent turns it off. Agent.ImageGC returns
// it (DeleteUnusedImages for an eviction manager).
// # Eviction
//
// With Options.Eviction the agent runs the kubelet's eviction manager
// (agent/eviction) on its own goroutine, every 10 s by default: it sees
// the agent's active pods (not mirror pods, not those already asked to
// terminate), evicts one through its pod worker (a kill with Evict set,
// the eviction's grace period and a status function), and every later
// status of the pod, the final one included, keeps phase Failed, reason
// Evicted, the kubelet's message and the DisruptionTarget condition. Its
// admission runs first among the AdmitHandlers (a refused pod is Failed,
// reason Evicted, "Pod was rejected: The node had condition:
// [MemoryPressure]. "), and with Cluster the Node's MemoryPressure,
// DiskPressure and PIDPressure follow it. By default it reads this
// machine's signals, with the runtime's volume root as the node file
// system, and the runtime's pod stats with the disk usage of the pods'
// emptyDirs and logs. Agent.Eviction returns it.
// # Graceful node shutdown
//
// Opt-in, with Options.ShutdownGracePeriod (and
// ShutdownGracePeriodCriticalPods) or ShutdownGracePeriodByPodPriority
// (agent/shutdown, the kubelet's node shutdown manager). Agent.ShutdownNode,
// while Run runs: new pods are refused (NodeShutdown); the Node's Ready
// turns False, "node is shutting down" (the shutdown composes itself after
// Cluster.Node.Provider and writes the status at once, node.Controller.
// SyncStatus); the active pods are killed through their pod workers group
// by group, lowest priority first, each with min(its grace period, its
// group's), a group waited for at most its grace period; a stopped pod's
// status is Failed, reason Terminated, with a DisruptionTarget condition,
// also in its final status. ShutdownNode then waits, within what is left
// of the budget (the sum of the groups' periods), for the final statuses
// to be written to the API server, and returns; the caller ends Run. A
// kill's status edit (podworker.KillPodOptions.PodStatusFunc) is decided,
// as the kubelet's, on the status before the kill: a running pod stopped
// for the shutdown is Failed even when its containers exit 0.
//
// # Ownership
//
// New builds everything and starts nothing; Run starts every goroutine and
// returns only after all of them have returned. Logger, clock and metrics
// registry are injected; the package has no global state and never uses
// the process-wide default Prometheus registry. Pods keep running in the runtime when Run
// returns: a new agent over the same runtime adopts the desired ones and
// terminates the others as orphans.
//
// # Limits
//
// Probes (runtime/prober) run for every pod unless Options.DisableProbes:
// readiness and startup results feed the status; a failed liveness or
// startup probe kills the container (ContainerKiller), which the runtime
// restarts by the restart policy. Not done: volumes, node resource
// management and eviction. See docs/pod-spec.md for every pod-spec field.
package agent
