// Package metrics exports the kubelet's pod lifecycle metrics for a podlife
// agent, registered into a prometheus.Registerer the caller owns. It never
// touches the process-wide default Prometheus registry and holds no global state, so several
// agents (or tests) in one process each get their own set.
//
// With the default namespace "kubelet" the names and labels are the
// kubelet's, so existing dashboards and alerts keep working:
//
//	desired_pods{static}                         gauge      pods the agent is instructed to run
//	active_pods{static}                          gauge      pods considered active for admission
//	mirror_pods                                  gauge      mirror pods the agent will try to create
//	working_pods{lifecycle,config,static}        gauge      pod workers by phase, by desired/orphan/runtime_only, by static
//	restarted_pods_total{static}                 counter    pods recreated with the same UID and started again
//	orphaned_runtime_pods_total                  counter    runtime pods the workers did not know
//	pod_worker_duration_seconds{operation_type}  histogram  one sync of one pod (default buckets)
//	pod_worker_start_duration_seconds            histogram  first sight of a pod to its worker starting (default buckets)
//	containers_per_pod_count                     histogram  containers per pod (buckets 1, 2, 4, 8, 16)
//
// # Label values
//
// static is "true" for a pod that does not come from the API server and ""
// otherwise (StaticTrue, StaticFalse). working_pods adds "unknown"
// (StaticUnknown) for runtime-only pods, whose source cannot be known.
// lifecycle is sync, terminating or terminated; config is desired, orphan or
// runtime_only. Of the 3×3×3 combinations only 15 are valid: each lifecycle
// with (desired, ""), (desired, "true"), (orphan, ""), (orphan, "true") and
// (runtime_only, "unknown"); see WorkingPodKeys and WorkingPodKeyFor.
// operation_type is create, update, sync, kill, terminated or unknown.
//
// # The 23 series
//
// The six pod-count metrics have exactly 23 series: desired_pods 2,
// active_pods 2, mirror_pods 1, working_pods 15, restarted_pods_total 2 and
// orphaned_runtime_pods_total 1. New creates all of them at zero, and every
// housekeeping pass keeps all of them: SetWorkingPods sets every valid
// combination (0 for those it is not given), and the counters are Add-ed even
// by 0.
//
// # Who calls what
//
// The agent's housekeeping pass calls, once per pass, SetDesiredPods and
// SetActivePods (for both values of static), SetMirrorPods, AddRestartedPods
// (for both values of static), AddOrphanedRuntimePods and SetWorkingPods. The
// pod workers call ObservePodWorkerDuration and ObserveContainersPerPod
// through a small interface of their own (this package imports no other
// podlife package). The agent's Syncer calls ObservePodWorkerStartDuration on
// a pod's first sync (SyncPodCreate) with the time since the pod was first
// seen (its kubernetes.io/config.seen annotation), as the kubelet does.
//
// All methods are safe for concurrent use. A nil *Metrics is valid and does
// nothing. Setting several series is not atomic with respect to a scrape: a
// scrape during a housekeeping pass may see some values of the previous pass,
// as with the kubelet.
package metrics
