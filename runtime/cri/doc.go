// Package cri implements runtime.Runtime over the Container Runtime Interface
// (k8s.io/cri-api v1, RuntimeService and ImageService over gRPC), so that a
// podlife node agent runs its pods in containerd, CRI-O or fakecri.
//
//	rt, err := cri.New(cri.Options{Endpoint: "unix:///run/containerd/containerd.sock"})
//	defer rt.Close()
//
// # Identity
//
// Sandboxes and containers carry the kubelet's labels (io.kubernetes.pod.uid,
// io.kubernetes.pod.name, io.kubernetes.pod.namespace,
// io.kubernetes.container.name) and annotations (io.kubernetes.container.hash,
// io.kubernetes.container.restartCount, io.kubernetes.pod.terminationGracePeriod,
// termination message path and policy). An agent that restarts finds its
// pods again with GetPods, and `crictl pods` / `crictl ps` show them as they
// show kubelet pods. A pod found this way can be killed without its spec: the
// grace period comes from the containers' annotations.
//
// # Errors and timeouts
//
// gRPC status codes become runtime errors in one place (errors.go): NotFound
// → runtime.ErrNotFound, Unavailable → runtime.ErrUnavailable, and so on; the
// result also wraps the original gRPC error. Every call has a deadline,
// Options.Timeout (default 2 minutes, the kubelet's); a container stop gets
// its grace period on top, an image pull Options.ImagePullTimeout. Calls do
// not wait for a connection: a runtime that is down, or a socket that does not
// exist, gives runtime.ErrUnavailable at once, and the client reconnects by
// itself (at most Options.ReconnectMaxDelay apart) when the runtime is back.
// "Not found" while stopping or removing counts as done.
//
// # Sandboxes
//
// By default (NetworkModeNode) every sandbox uses the node's network
// namespace and sets no hostname, which is what a runtime without CNI
// supports; NetworkModePod honours pod.Spec.HostNetwork instead. Each pod
// gets the cgroup parent Options.CgroupParent + "/pod" + UID (cgroupfs
// form); without a cgroup parent, containerd's pod stats fail.
//
// # SyncPod
//
// SyncPod is plan-then-act, like the pod workers' Machine: it reads the
// pod's runtime status, then planSync, a pure function of the spec, that
// status, a read-only view of the back-off and the time (the kubelet's
// computePodActions), decides everything: whether to create the sandbox
// and why, which containers to stop and why (sandbox dead, spec changed,
// unknown state), which ephemeral containers start, which init container
// or sidecar comes next, which regular containers start or restart, the
// back-off to report, and whether every container finished for good. runPlan then carries the plan out,
// records the back-off of restarts that go ahead, and joins the errors.
// The plan is logged at verbosity 4 in one line ("sync plan"), so that a
// user can see why a container was (re)started. The planner's rules are
// tested by transcripts (testdata/plan: a pod, a status, the plan) and a
// property test.
//
// SyncPod creates a sandbox when none is ready (a new attempt after a dead
// one), checks each image with ImageStatus and pulls only missing ones
// (a missing image with pull policy Never is an error), creates and starts
// containers, and restarts exited ones as the restart policy says, with a
// per-container crash-loop back-off (10 s doubling to 5 min, on the injected
// clock) reported as runtime.ErrBackOff. A running container whose spec
// changed (its recorded io.kubernetes.container.hash differs from
// runtime.HashContainer of the spec, as after an image change) is replaced.
// It keeps the newest dead instance of each container and removes older ones.
//
// A container that cannot be started gives a *runtime.StartError in
// SyncPod's joined error, with the kubelet's waiting reason and message
// (image.go, container.go): InvalidImageName, ImageInspectError,
// ErrImageNeverPull, ErrImagePull (the message is the runtime's pull
// error), ImagePullBackOff, CreateContainerConfigError (runAsNonRoot, the
// options provider's error, a volume), CreateContainerError,
// RunContainerError, PostStartHookError; the kubelet's events go with
// them (Failed "Failed to pull image ...", Failed "Error: ErrImagePull",
// BackOff "Back-off pulling image ...", ...). A failed pull starts a back-off
// per pod and image (Options.ImagePullBackOffInitial, 10 s doubling to
// 300 s, on the injected clock): until it expires, syncs do not pull that
// image for that pod and report ImagePullBackOff ("Back-off pulling image
// "IMG": ErrImagePull: ..."); the next sync after it pulls again, and the
// pod starts once a pull succeeds. As in the kubelet, this back-off lives
// in the executor's image step, not in the plan: the plan says "start",
// the start reports why it could not.
//
// Init containers run first, in order, each to success before the next;
// a failed one is restarted with the back-off, or, under restartPolicy
// Never, fails the pod (nothing more starts; the agent's status says
// Failed). Sidecars (init containers with restartPolicy Always) start in
// their turn, the next waiting until one runs (and, with Options.Started,
// until its startup probe passed); they restart whenever they exit, but
// never hold a Never or OnFailure pod's completion. A new sandbox runs the
// init containers again. KillPod stops the regular containers first, then
// the sidecars one by one in reverse order with what is left of the grace
// period. KillContainer stops one container (a failed liveness probe);
// ExecSync runs a command in one (exec probes).
//
// # Ephemeral containers
//
// Ephemeral containers (spec.ephemeralContainers, what kubectl debug adds
// to a running pod) run as in the kubelet (ephemeral.go): each is started
// once, in the first sync that finds the pod's sandbox up (not the one
// that creates it) while the pod has neither failed nor finished, before
// the init containers, and never again, whatever the restart policy: once
// the runtime has an instance of it, running or exited, it is left alone
// (an instance created but never started is started). A start that fails
// before anything was created fails that container alone, with the
// kubelet's reason (a CreateContainerConfigError for one this adapter
// cannot run, such as a volume it cannot mount, or whose target has no
// instance), and the next sync tries again; no crash-loop back-off
// applies. It gets what a regular container gets (image and pull
// credentials, the options provider's environment and mounts, its security
// context) and, with a targetContainerName, joins the PID namespace of that
// container's newest instance (NamespaceMode_TARGET with its ID, unless the
// pod shares one PID namespace or the node's). It counts for nothing else:
// not for the pod's initialization or completion (a pod whose regular
// containers are done has its sandbox stopped, which ends a debugger still
// running in it), and KillPod stops it with the others, with the pod's
// grace period.
//
// # Container config
//
// Each container's CRI config carries what the kubelet would give it
// (config.go, security.go, volumes.go):
//
//   - Resources: CPU shares from the request, a CFS quota from the limit,
//     the memory limit, and the OOM score adjustment of the pod's QoS class
//     (runtime.QOSClass): Guaranteed -997, BestEffort 1000,
//     Burstable 1000-1000*memoryRequest/Options.NodeMemoryCapacity within
//     [3, 999], a sidecar no higher than the smallest regular container.
//     NodeMemoryCapacity defaults to /proc/meminfo's MemTotal, read once.
//   - Security context: the container's fields over the pod's (runAsUser,
//     runAsGroup, runAsNonRoot, seccompProfile); privileged, capabilities,
//     readOnlyRootFilesystem, allowPrivilegeEscalation; the pod's fsGroup
//     and supplementalGroups as supplemental groups of the sandbox and
//     every container. runAsNonRoot is checked against the runAsUser, else
//     the image's user (ImageStatus), with the kubelet's messages: a
//     container that would run as root is not created (a Failed event and
//     a CreateContainerConfigError wrapping runtime.ErrFailedPrecondition,
//     retried at the next sync, as the kubelet's). seccompProfile
//     RuntimeDefault, Unconfined or Localhost (under
//     Options.SeccompProfileRoot) goes to the containers and the sandbox;
//     none set is Unconfined, the kubelet's default.
//   - Volumes: emptyDir is a folder
//     Options.VolumeRoot/UID/volumes/kubernetes.io~empty-dir/NAME, mode
//     0777 (group fsGroup and setgid when the pod sets one), kept for the
//     pod's life and deleted by RemovePod; hostPath is checked against its
//     type as the kubelet does (DirectoryOrCreate and FileOrCreate create
//     it). They are CRI mounts with readOnly, subPath (or subPathExpr,
//     expanded against the container's environment with the kubelet's
//     checks: a missing or empty variable, an absolute path or a '..'
//     keep the container from being created) and mountPropagation.
//     Other sources are not mounted: a pod that mounts
//     one in a container is refused, naming the volume's field; one that
//     only declares it runs, and the UnsupportedPodFields event names it.
//     The service-account token volume the API server adds to every pod
//     (kube-api-access-*) is let through unmounted and reported.
//     emptyDir medium Memory and recursiveReadOnly Enabled are refused
//     by name; an emptyDir sizeLimit is reported, not enforced.
//
// # Hooks and termination messages
//
// postStart and preStop handlers (exec through ExecSync, httpGet to the
// pod's IP or 127.0.0.1, sleep on Options.Clock) run as in the kubelet
// (hooks.go): postStart right after the start, a failure killing the
// container (FailedPostStartHook) and failing SyncPod; preStop before
// each stop with a grace period, its time taken out of the grace period
// (at least MinimumGracePeriod left for the stop), a failure recorded as
// FailedPreStopHook. The preStop handler is recorded on the container
// (AnnotationPreStopHandler), so that KillContainer and KillPod without a
// spec run it too. tcpSocket handlers are refused.
//
// Each container instance gets a host file under Options.VolumeRoot/UID
// mounted at its terminationMessagePath (termination.go); once it has
// exited, GetPodStatus reads the message from it, or with
// FallbackToLogsOnError from the end of the container's log, which the
// runtime writes under VolumeRoot/UID/logs (or, with Options.PodLogsDir,
// under PodLogsDir/NAMESPACE_NAME_UID as the kubelet's /var/log/pods,
// which RemovePod deletes at once). RemovePod moves VolumeRoot/UID
// into VolumeRoot/.podlife-removed, one rename, and a goroutine of the
// Runtime deletes it from there (trash.go): the pod finishes without
// waiting for its files, and a pod of the same UID started at once gets a
// new folder. Close stops that goroutine; the next Runtime on the same
// VolumeRoot deletes what is left.
//
// For a node server and the log rotation (agent/server, agent/logrotate)
// the Runtime gives a container's log file (ContainerLogPath, from CRI
// ContainerStatus), whether it runs (ContainerRunning), and has the
// runtime reopen it after a rotation (ReopenContainerLog).
//
// # Metrics
//
// With Options.Registerer, every CRI call is counted and timed as the
// kubelet's instrumented runtime does, under its names and operation
// types (metrics.go): kubelet_runtime_operations_total,
// kubelet_runtime_operations_errors_total and
// kubelet_runtime_operations_duration_seconds{operation_type} (run_podsandbox,
// create_container, container_status, list_podsandbox, ...). A pod start
// on a fake runtime shows where its calls go.
//
// Not implemented: volume sources other than emptyDir and hostPath, ports.
package cri
