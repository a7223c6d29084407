// Package eviction is the kubelet's eviction manager
// (pkg/kubelet/eviction): it watches the node's memory, disk and process
// IDs, reports the MemoryPressure, DiskPressure and PIDPressure
// conditions, refuses new pods under pressure, frees disk space with the
// image and container garbage collectors, and evicts pods, one per pass,
// in the kubelet's order, until the pressure is gone. It also evicts pods
// over an emptyDir sizeLimit or an ephemeral-storage limit.
//
// # Signals and thresholds
//
// The signals are memory.available, nodefs.available, nodefs.inodesFree,
// imagefs.available, imagefs.inodesFree and pid.available. They come from
// a NodeStatsProvider: Machine reads this machine (/proc/meminfo, statfs
// of the node and image file systems, pid_max and the process count; the
// image file system is where the runtime's CRI ImageFsInfo says its images
// are, with Machine.ImageFsMountpoint, as the agent sets it); a
// VM or remote provider, or a test, supplies its own. The pods' usage
// comes from a PodStatsProvider (Summary API figures): runtime/cri's
// ListPodStats for memory, and LocalStorage for the disk usage of the
// pods' emptyDirs and logs, measured as du does.
//
// A threshold is met when a signal's available amount is below its value,
// a quantity or a percentage of the capacity (ParseThresholds reads the
// kubelet's --eviction-hard, --eviction-soft, --eviction-soft-grace-period
// and --eviction-minimum-reclaim). The defaults are the kubelet's hard
// thresholds: memory.available<100Mi, nodefs.available<10%,
// nodefs.inodesFree<5%, imagefs.available<15%, imagefs.inodesFree<5%. A
// soft threshold acts once met for its grace period; a threshold once met
// stays met until its minimum reclaim is available beyond it.
//
// # A pass
//
// Every Options.MonitoringInterval (default 10 s), Synchronize:
//
//  1. observes the signals, and the thresholds met (with minimum reclaims
//     of those met before);
//  2. sets the pressure conditions of the thresholds met, each kept on for
//     Options.PressureTransitionPeriod (default 5 min) after its last
//     sighting;
//  3. evicts every pod whose emptyDir is over its sizeLimit (`Usage of
//     EmptyDir volume "x" exceeds the limit "1Mi". `), whose ephemeral
//     storage is over the sum of its containers' limits, or one of whose
//     containers' logs (and writable layer) are over its limit;
//  4. otherwise, for the first threshold met past its grace period, memory
//     first, and only on stats newer than the last pass's: records a
//     Warning EvictionThresholdMet event on the node; for disk, runs the
//     container then the image garbage collector and stops if every
//     threshold is then resolved; else evicts the first pod in rank.
//
// Pods are ranked as the kubelet ranks them: for memory and disk, pods
// without stats first, then those using more than they request, then by
// priority (lowest first), then by usage above request (largest first);
// for PIDs by priority, then process count. Critical pods (static, mirror,
// or of system-critical priority) are never evicted.
//
// An eviction asks Options.Evict to stop the pod with a grace period of
// 1 s (hard threshold, local storage limit) or
// Options.MaxPodGracePeriodSeconds (soft threshold), and to give it phase
// Failed, reason Evicted, the kubelet's message ("The node was low on
// resource: memory. Threshold quantity: 100Mi, available: 80Mi. Container
// c was using 2Gi, request is 0, has larger consumption of memory. ") and,
// except for local storage limits, a DisruptionTarget condition with
// reason TerminationByKubelet (Eviction.Apply); a Warning Evicted event is
// recorded on the pod, annotated with the offending containers. After an
// eviction Run waits, up to 30 s, for the pod to be cleaned up
// (Options.PodCleanedUp) and passes again at once.
//
// Admit is the kubelet's admission under pressure: under MemoryPressure
// alone, BestEffort pods are refused unless they tolerate the
// node.kubernetes.io/memory-pressure taint; under any other pressure every
// pod but critical ones; reason Evicted, message "The node had condition:
// [DiskPressure]. ".
//
// # Costs
//
// A pass reads the node's stats, and the pods' stats only when it will
// look at them: when some active pod has a local storage limit (an
// emptyDir sizeLimit or an ephemeral-storage limit) or a threshold is met.
// (The kubelet reads them every pass from cAdvisor's cache; from a CRI
// runtime every pod's stats cost about 0.1 ms of CPU a pod, seconds at
// 100,000 pods.) Without pressure it walks the pods once and indexes the
// stats of those with storage limits only; under pressure it indexes every
// pod's stats and picks the first pod in rank in one walk (no sort): about
// 20 ms without pressure and 80 ms under memory pressure at 100,000 pods,
// stats reading excluded (docs/benchmarks.md). Machine reads a few /proc
// files and makes two statfs calls; LocalStorage walks the pods' emptyDir
// and log folders at every call.
//
// # Failures
//
// Stats that cannot be read, or that make no sense (a capacity of zero,
// more available than the capacity, figures out of range), leave their
// signals unobserved: nothing is evicted on them, and the conditions keep
// their state until stats come back. Without pod stats nothing is evicted.
// Each failure is logged once per row, its end at V(2). Grace and
// transition periods are timed on Options.Clock: the real clock's
// monotonic readings make wall clock jumps harmless, and a clock that goes
// back restarts a grace period and keeps a condition on rather than
// evicting early or clearing it.
//
// # Compared with the kubelet
//
// Same signals (but allocatableMemory.available and the containerfs
// signals of split image file systems), defaults, parsing, order of a
// pass, ranking, messages, annotations, reasons and admission. Differences:
// node and pod stats come from two providers instead of the Summary API;
// memory comes from /proc/meminfo (MemFree + Inactive(file) available)
// rather than the root memory cgroup, and there is no memcg threshold
// notifier (passes are periodic only); a pass picks the first pod in rank
// without sorting them all; a threshold or condition first seen "in the
// future" (a clock that went back) is moved to now; pods already asked to
// terminate are not candidates. The metrics are the kubelet's evictions
// counter (label eviction_signal) and eviction_pass_duration_seconds, with
// Options.Registerer (names prefixed with Options.MetricsNamespace,
// default "kubelet").
package eviction
