// Package chaos holds podlife's chaos soak: the whole agent (pod sources, pod
// manager, pod workers, the CRI adapter over a real unix socket, fakecri)
// driven by a seeded random schedule of pod churn, CRI faults, runtime
// restarts and agent restarts, with the lifecycle invariants checked while
// it runs and once the faults stop. The package has no API; everything is in
// its tests:
//
//	go test ./test/chaos -run Soak                           # short soak (CI)
//	go test ./test/chaos -run Soak -chaos.duration=30m \
//	    -chaos.pods=5000 -timeout=40m                         # long soak
//
// A failing run prints its seed and the last events of the schedule; run it
// again with -chaos.seed=N and the same flags to replay the same schedule
// (goroutine interleavings, and so timings, still differ between runs).
// See docs/reliability.md for what is checked and the recorded results.
package chaos
