package podmanager

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// MirrorClient creates and deletes the mirror pods of static pods in the API
// server. The client-go implementation is in package
// github.com/podlife/podlife/podmanager/kubemirror; podmanagertest has an
// in-memory fake.
type MirrorClient interface {
	// CreateMirrorPod creates the mirror of the static pod: a copy whose
	// ConfigMirrorAnnotationKey annotation carries the static pod's config
	// hash, owned by the Node. A mirror with the same name and the same hash
	// that already exists counts as success.
	CreateMirrorPod(ctx context.Context, pod *v1.Pod) error
	// DeleteMirrorPod deletes the mirror pod named fullName (name_namespace)
	// with grace period 0; when uid is not nil, only the pod with that UID is
	// deleted. It reports whether a pod was deleted. A mirror that is already
	// gone (NotFound) or was replaced (Conflict on the UID precondition) is
	// not an error: it returns (false, nil).
	DeleteMirrorPod(ctx context.Context, fullName string, uid *types.UID) (bool, error)
}

// MirrorClientFuncs adapts two functions to a MirrorClient. A nil function
// does nothing and succeeds (DeleteMirrorPod then reports false).
type MirrorClientFuncs struct {
	CreateMirrorPodFunc func(ctx context.Context, pod *v1.Pod) error
	DeleteMirrorPodFunc func(ctx context.Context, fullName string, uid *types.UID) (bool, error)
}

var _ MirrorClient = MirrorClientFuncs{}

// CreateMirrorPod calls CreateMirrorPodFunc.
func (f MirrorClientFuncs) CreateMirrorPod(ctx context.Context, pod *v1.Pod) error {
	if f.CreateMirrorPodFunc == nil {
		return nil
	}
	return f.CreateMirrorPodFunc(ctx, pod)
}

// DeleteMirrorPod calls DeleteMirrorPodFunc.
func (f MirrorClientFuncs) DeleteMirrorPod(ctx context.Context, fullName string, uid *types.UID) (bool, error) {
	if f.DeleteMirrorPodFunc == nil {
		return false, nil
	}
	return f.DeleteMirrorPodFunc(ctx, fullName, uid)
}

// ErrNodeBeingDeleted is returned (wrapped) by a MirrorClient that refuses to
// create a mirror pod because its Node has a deletion timestamp.
var ErrNodeBeingDeleted = errors.New("node is being deleted")

// IsMirrorPodOf reports whether mirrorPod is the mirror of pod: same name and
// namespace, and a mirror annotation equal to pod's config hash.
func IsMirrorPodOf(mirrorPod, pod *v1.Pod) bool {
	if mirrorPod == nil || pod == nil {
		return false
	}
	if mirrorPod.Name != pod.Name || mirrorPod.Namespace != pod.Namespace {
		return false
	}
	hash, ok := MirrorHash(mirrorPod)
	return ok && hash == PodHash(pod)
}

// ReconcileMirrorPod brings the mirror of a static pod in line with it, the
// way the kubelet does on every sync of a static pod:
//
//   - a mirror pod that is being deleted, or whose hash is stale, is deleted
//     by UID (so a newer mirror created meanwhile is left alone);
//   - when there is no mirror pod, or the stale one was just deleted, a new
//     one is created, unless the static pod itself is being deleted.
//
// mirrorPod is the mirror currently known for pod (nil when none, e.g. from
// Manager.GetPodAndMirrorPod). Pods that are not static are ignored. Errors
// are returned wrapped; the caller retries on its next sync.
func ReconcileMirrorPod(ctx context.Context, client MirrorClient, pod, mirrorPod *v1.Pod) error {
	if client == nil || !IsStaticPod(pod) {
		return nil
	}
	fullName := FullName(pod)
	deleted := false
	if mirrorPod != nil && (mirrorPod.DeletionTimestamp != nil || !IsMirrorPodOf(mirrorPod, pod)) {
		uid := mirrorPod.UID
		ok, err := client.DeleteMirrorPod(ctx, fullName, &uid)
		if err != nil {
			return fmt.Errorf("delete stale mirror pod %q (uid %s): %w", fullName, uid, err)
		}
		deleted = ok
	}
	if (mirrorPod == nil || deleted) && pod.DeletionTimestamp == nil {
		if err := client.CreateMirrorPod(ctx, pod); err != nil {
			return fmt.Errorf("create mirror pod %q: %w", fullName, err)
		}
	}
	return nil
}
