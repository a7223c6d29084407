// Package runtime describes the world as the container runtime sees it: the
// pods and containers that actually exist on the node (Pod, Container), their
// observed status (PodStatus), and a status cache (Cache) that the pod workers
// consult before each sync so that a decision is never taken on data older than
// the previous one.
//
// The package imports no gRPC. The CRI adapter that fills these types from a
// real runtime lives in runtime/cri; an in-process CRI server for tests lives
// in runtime/fakecri.
//
// Ownership: values returned by a Cache are shared snapshots. Callers must
// treat them as read-only; writers hand a fresh *PodStatus to Set instead of
// mutating one they got back.
package runtime
