// Package scale holds podlife's scale test: one whole agent (API pods from a
// channel source, the pod manager, the pod workers, the CRI adapter over a
// real unix socket, or with -scale.direct through fakecri's Conn without a
// transport, fakecri) holding many pods at once. It creates N pods of one
// container each, waits until every one runs, measures the live heap, the
// duration of the housekeeping pass and of a container GC pass, and the
// time to delete every pod, logs the CRI calls per pod of each phase, and
// checks that every pod ran and that the drain left nothing behind. The
// package has no API; everything is in its tests:
//
//	go test ./test/scale                                          # 2,000 pods (CI, also under -race)
//	go test ./test/scale -run Scale -v -scale.pods=100000 -timeout=60m
//	go test ./test/scale -run Scale -v -scale.pods=100000 -timeout=60m -scale.direct
//
// See docs/benchmarks.md ("Scale") for the recorded results.
package scale
