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
// # Init containers and sidecars
//
// Init containers run one at a time, in order, each to success, before the
// regular containers; they run again in a new sandbox. One that fails is
// restarted with the crash-loop back-off, except under RestartPolicy Never:
// then nothing more starts, what runs is stopped and so is the sandbox, and
// the pod's status shows the init container exited non-zero: the agent
// reports the pod Failed. Sidecars (init containers with restartPolicy
// Always) start in the init order; the next one starts once the sidecar is
// running and, when Options.Started is set (the prober's startup-probe
// gate), Started says so. Sidecars restart whenever they exit, in any pod;
// they do not hold a pod's completion: once every regular container has
// finished for good, SyncPod stops the sidecars (reverse order) and the
// sandbox. KillPod stops regular and init containers first, in parallel,
// then the sidecars one at a time in reverse order, within what is left of
// the grace period.
//
// Each container carries the label io.podlife.container.type (init, sidecar
// or regular) and the annotation io.podlife.container.index (its position in
// its list of the spec): runtime.ContainerStatus.Type gives the type to
// status readers, and KillPod orders sidecars without a spec. Status readers
// compute the phase from the regular containers only (sidecars running do
// not make a completed pod Running); runtime.ContainerStatus.SandboxID tells
// which instances belong to the current sandbox.
//
// # Container config, hooks, events
//
// Resources become CRI Linux resources (cpu shares, CFS quota, memory
// limit, OOM score by runtime.QOSClass); the security context, env
// valueFrom (fieldRef, resourceFieldRef), $(VAR) expansion, emptyDir and
// hostPath volumes are honoured; docs/pod-spec.md lists every field. A
// field the adapter does not honour makes SyncPod fail with an error
// naming it (runtime.ErrInvalidArgument and runtime.ErrUnimplemented).
// postStart and preStop hooks run through Options.HookRunner (default:
// ExecSync, net/http, sleep); a failed postStart kills the container
// (ErrHook); preStop time comes out of the grace period. Options.Recorder
// receives the kubelet's events. (*Runtime).BackOff gives the
// CrashLoopBackOff messages of containers waiting for their back-off;
// runtime.ContainerStatus.Message carries the termination message (the
// terminationMessagePath file, or the log with FallbackToLogsOnError) and
// Reason the runtime's Completed, Error or OOMKilled.
//
// Probes are not run here (runtime/prober).
package cri
