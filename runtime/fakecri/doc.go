// Package fakecri is an in-process CRI server — RuntimeService and
// ImageService of k8s.io/cri-api v1 over real gRPC — for tests, demos and the
// example agent. It serves on a unix socket (StartUnix) or an in-memory
// listener (StartInMemory with DialContext), and to a client in the same
// process through Conn, a connection without a transport that runs its
// handlers directly (for an agent holding thousands of pods: it spares
// their calls the HTTP/2 framing). It keeps sandboxes, containers and
// images in memory, and injects faults.
//
// # Behaviour
//
// Sandboxes: RunPodSandbox → READY; StopPodSandbox → NOTREADY and kills its
// containers (exit 137); RemovePodSandbox of a READY sandbox is refused
// (FailedPrecondition), of a stopped one removes its containers too, of an
// unknown one succeeds (idempotent, as the CRI says). Reusing a name and
// attempt is AlreadyExists.
//
// Containers: CreateContainer → CREATED (the sandbox must be READY, the image
// present, the name and attempt unused in the sandbox; with PID namespace
// mode TARGET, an ephemeral container's, the target must be a running
// container of the same sandbox, as containerd checks: the mode is
// recorded, not enacted); StartContainer →
// RUNNING; StopContainer → EXITED with code 0. Their first arguments choose
// what the "process" does, with the same words as the project's local pause
// image: "exit N" exits with N right after starting; "hang" ignores SIGTERM,
// so StopContainer lasts its whole timeout (on the server's clock) and ends
// with 137. ExitContainer makes a running container exit by itself.
// ContainerStatus, PodSandboxStatus, StartContainer, ExecSync and
// UpdateContainerResources of unknown IDs answer NotFound; StopPodSandbox,
// StopContainer, RemovePodSandbox and RemoveContainer of an unknown ID
// succeed (idempotent). UpdateContainerResources records the resources of a
// created or running container (an exited one is FailedPrecondition) and
// ContainerStatus reports them, starting from the config's; it reports the
// config's mounts too. ContainerConfig and SandboxConfig return the configs
// as CreateContainer and RunPodSandbox received them. ListContainers
// and ListPodSandbox filter by ID (the full ID or a unique prefix), sandbox,
// state and label selector, together.
//
// Logs: a container whose sandbox has a LogDirectory and whose config a
// LogPath gets its CRI log file (their join, ContainerStatus.LogPath)
// created when it starts; "log ARGS" writes ARGS to it, "exit CODE"
// "pause: exiting with CODE", as the pause image prints them, and WriteLog
// makes a running container print more. ReopenContainerLog of a running
// container creates the file again when a log rotation renamed it away;
// of a container that is not running it answers Unknown ("container is not
// running", as containerd) and creates nothing.
//
// Images: references are normalized as containerd normalizes them
// ("busybox" is docker.io/library/busybox:latest). An image has a "sha256:"
// ID, the tags it was pulled as (RepoTags) and repo@digest for each
// repository it came from (RepoDigests); ImageStatus, ListImages' filter,
// RemoveImage and CreateContainer find it by ID, any tag or any digest, and
// PullImage answers its ID, which ContainerStatus and ListContainers report
// as ImageRef and ImageId. RemoveImage removes the image with all its tags.
// ImageFsInfo reports one file system at Options.ImageFsMountpoint used by
// the sum of the images' sizes; ImageFsStats adds Options.ImageFsCapacity.
// ImageStatus answers "no image" for a missing one. PullImage of any name
// succeeds, in Options.PullLatency; each name is then an image of its own,
// unless Options.Registry says which references serve one image (its ID,
// digest and user, as a registry would). Options.Images preloads some.
//
// Scripts: Options.Script, asked at every StartContainer with the
// sandbox's and the container's configs, can replace the arguments' words
// with a ContainerScript, kept with the container for its life. The
// container exits by itself with ExitCode, at once or RunFor after its
// start on the server's clock, unless it exited or was removed before
// (ExitContainer, StopContainer, StopPodSandbox, StopSandbox,
// RemoveContainer, RemovePodSandbox and Forget cancel the timed exit).
// StopContainer makes it exit with TermExitCode after TermDelay, releasing
// the server meanwhile, or kills it (137) at the stop's timeout when that
// is shorter; an exit of its own during the wait stands. Timed exits wait
// on a single timer of the clock, served by one goroutine that runs only
// while exits are pending; they keep their time across Down and Up (the
// "processes" outlive the daemon) and Stop drops them. Options.PullScript
// makes a PullImage, by its reference and sandbox config, take longer
// (on the clock, cut short by the client's deadline) or fail with an error
// of the script's choosing, without adding the image.
//
// # Compared with containerd v2
//
// Where the CRI leaves a choice, fakecri does what containerd v2 does: stop
// and remove are idempotent for unknown IDs; image references are normalized with
// docker.io/library defaults and "latest"; RemoveImage by one tag removes the
// whole image; list filters take an ID prefix; an exited container's
// resources cannot be updated. One difference is kept on purpose:
// RemovePodSandbox of a READY sandbox is refused, where containerd v2 stops
// it first, so that a client that forgets to stop a sandbox is caught in its
// tests. The Kubernetes CRI validation suite (critest
// v1.37.0, scripts/critest.sh) passes every spec that needs no real process,
// network, kernel feature or stream; docs/critest.md lists the skipped
// groups and why.
//
// # Faults
//
// Inject adds a Fault: for one method or all (AnyMethod), a gRPC code to
// answer with, a number of calls (once, N times or always), a probability
// drawn from Options.Rand, and added latency on Options.Clock that the
// client's deadline cuts short. FailNext, FailTimes and Delay are shorthands.
// Down takes the server off the air (socket gone, connections dropped) and Up
// brings it back with its state, like a runtime daemon restart. Forget and
// StopSandbox change state behind the client's back. Calls and CallCount
// report what was called.
//
// # Limits
//
// ExecSync runs a command in a running container: by default the pause
// image's words (echo, exit CODE, hang, true, false; anything else exits
// 127), or whatever a test's ExecFunc answers (SetExec), so that probes and
// hooks can be tested on it.
//
// Only the calls above are implemented (Version, Status, the sandbox,
// container and image calls, ExecSync, UpdateContainerResources,
// ReopenContainerLog), with Exec, Attach and PortForward on a streaming
// server (streaming.go) and made-up stats (stats.go); events, checkpoint
// and runtime config answer Unimplemented. Labels and filters are
// honoured; there are no processes, mounts or networks.
//
// # Why not k8s.io/cri-api/pkg/apis/testing
//
// That package's FakeRuntimeService and FakeImageService implement the
// client-side Go interfaces, not the gRPC servers, so they would need an
// adapter anyway, and most of their behaviour would need overriding: their
// "not found" errors are plain errors without gRPC codes (a client cannot
// tell NotFound from any failure), RemovePodSandbox removes a running sandbox
// and leaves its containers behind, StopPodSandbox leaves containers running,
// container and sandbox IDs are derived from names so a re-created attempt
// overwrites the old one, time comes from time.Now, and fake IPs and versions
// are package-level mutable variables. fakecri therefore keeps its own small
// state machine.
package fakecri
