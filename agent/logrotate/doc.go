// Package logrotate rotates the log files of running containers, as the
// kubelet's container log manager (pkg/kubelet/logs): the CRI log file of a
// container (ContainerStatus.LogPath, "TIMESTAMP STREAM P|F CONTENT" lines)
// is written by the runtime and would grow without end.
//
// A Manager passes once at Run, then every Options.Interval (default 10 s,
// the kubelet's containerLogMonitorInterval), with Options.Workers
// goroutines (default 1, containerLogMaxWorkers). For each running
// container whose log file has reached Options.MaxSize (default 10 MiB,
// containerLogMaxSize), in the log's folder:
//
//  1. leftovers of an interrupted rotation are deleted (FILE.STAMP.tmp, an
//     uncompressed FILE.STAMP whose FILE.STAMP.gz exists);
//  2. the oldest rotated files are deleted, so that MaxFiles-2 remain
//     (default 5 files in all, containerLogMaxFiles, at least 2);
//  3. those still uncompressed are gzipped to FILE.STAMP.gz (through
//     FILE.STAMP.tmp);
//  4. the log is renamed to FILE.STAMP (TimestampFormat, "20060102-150405",
//     the rotation's time on Options.Clock) and the runtime is asked to
//     reopen it (CRI ReopenContainerLog): the container's output goes on
//     into a new, empty FILE. If the runtime refuses, the log is renamed
//     back, to be rotated at a later pass.
//
// So a container instance has at most MaxFiles log files: the current one,
// the one rotated last (kept uncompressed: the runtime may still be
// writing to it until it has reopened the log, and a log shipper may still
// be reading it) and compressed older ones. A log file found missing (a
// rotation cut short between its rename and the reopen) is reopened,
// unless its folder is gone too: its pod is being removed (runtime/cri
// removes a pod's logs with its folder), and no runtime could reopen the
// file there (the kubelet asks anyway, and the runtime fails).
//
// # Cost
//
// A pass lists the running containers once (Runtime.GetPods) and stats one
// file per running container; the runtime is asked for a container's log
// path once, the first time it is seen, and the Manager forgets containers
// that no longer run. A rotation reads the log's folder, which holds that
// container's files only.
//
// # Failures
//
// Nothing is retried within a pass: what failed (the listing, a container's
// path, a file that cannot be removed or compressed, a reopen the runtime
// refuses) is tried again at the next pass, one Interval later. The first
// failure of a container in a row is logged as an error, the next ones at
// V(4), the recovery at V(2); the listing's likewise. A rotation that fails
// before the rename leaves the log in place, growing, until it succeeds (as
// the kubelet's). Rotate runs one pass by hand and returns its Result;
// passes never overlap.
//
// # Readers
//
// kubectl logs reads the current file only (agent/server, with the
// kubelet's reader k8s.io/cri-client/pkg/logs): after a rotation it shows
// what was written since. A followed log (kubectl logs -f) goes on across
// rotations: the reader watches the log's folder and reopens the log when
// it is created again. As with the kubelet, a follow that starts in the
// very instant of a rotation may stay on the renamed file.
//
// # Compared with the kubelet
//
// Same steps, names and defaults. Differences: the running containers come
// from Runtime.GetPods, and their log paths are remembered, where the
// kubelet lists containers and asks each one's status at every pass; only
// names of the rotation's own forms are deleted or compressed (the kubelet
// takes any FILE.*); a second rotation within the same second waits for a
// later pass instead of overwriting the first's file; the Interval may be
// shorter than the kubelet's 3 s minimum; removing a container's logs when
// the container is removed (the kubelet's Clean) is the runtime's business
// (runtime/cri deletes a pod's logs with its folder).
//
// # Metrics
//
// With Options.Registerer (names prefixed with Options.MetricsNamespace,
// default "kubelet"): container_log_rotations_total (logs rotated) and
// container_log_rotation_failures_total (container checks or rotations that
// failed). The kubelet has no such metrics; the runtime's own (runtime/cri:
// kubelet_runtime_operations_total{operation_type="reopen_container_log"})
// count the reopens.
package logrotate
