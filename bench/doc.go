// Package bench runs the same pod lifecycle workloads on podlife's
// podworker.Workers, on virtual-kubelet's node.PodController and on a bare
// goroutine-per-pod reference, so that their figures can be compared side by
// side.
//
// It is a separate module so that podlife's own module never depends on what
// it is compared with. Each implementation is an Engine; a Provider (the
// podworker.Syncer of podlife and of the bare reference, or the
// node.PodLifecycleHandler of virtual-kubelet) does no work besides telling
// the workload that a pod was synced or finished and injecting errors.
//
// The workloads are Lifecycle (N pods created until every one is synced, then
// deleted until every one is finished and the engine is idle), Memory (heap
// and goroutine stacks per idle synced pod) and Churn (create/delete cycles
// with a bounded number of pods in flight and injected provider errors).
// bench_test.go wraps them as go test benchmarks; cmd/compare runs them
// several times and prints a table of medians.
package bench
