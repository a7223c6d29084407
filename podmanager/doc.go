// Package podmanager holds the agent's desired state: which pods should exist
// on the node, static pods and their mirror pods, and the helpers that tell
// them apart.
//
// Pod identity:
//
//   - A pod's full name is name_namespace (FullName). Two pods with the same
//     full name but different UIDs are two incarnations of "the same" pod; for
//     static pods only one of them may run at a time.
//   - A static pod comes from a manifest file or an HTTP URL: its
//     kubernetes.io/config.source annotation is set and is not "api"
//     (IsStaticPod).
//   - A mirror pod is the API server's read-only copy of a static pod; it
//     carries kubernetes.io/config.mirror, whose value is the static pod's
//     kubernetes.io/config.hash (IsMirrorPod). Mirror pods never get a worker.
package podmanager
