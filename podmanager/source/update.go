package source

import v1 "k8s.io/api/core/v1"

// Operation is what a PodUpdate asks of its consumer.
type Operation int

// The operations, in the kubelet's vocabulary.
const (
	// ADD: pods seen for the first time. An ADD with no pods is a source's
	// first (empty) snapshot: the readiness signal.
	ADD Operation = iota
	// UPDATE: pods whose spec, labels, non-local annotations or deletion
	// fields changed, without a deletion timestamp.
	UPDATE
	// DELETE: pods whose semantic change carries a deletion timestamp
	// (graceful deletion). Consumers handle it like UPDATE.
	DELETE
	// REMOVE: pods that are gone from their source's snapshot.
	REMOVE
	// RECONCILE: pods whose status alone changed.
	RECONCILE
)

// String returns the kubelet name of the operation.
func (op Operation) String() string {
	switch op {
	case ADD:
		return "ADD"
	case UPDATE:
		return "UPDATE"
	case DELETE:
		return "DELETE"
	case REMOVE:
		return "REMOVE"
	case RECONCILE:
		return "RECONCILE"
	default:
		return "UNKNOWN"
	}
}

// PodUpdate is one incremental change from one source. The pods belong to the
// receiver, read-only: the Config never modifies a pod after emitting it.
type PodUpdate struct {
	Pods   []*v1.Pod
	Op     Operation
	Source string
}
