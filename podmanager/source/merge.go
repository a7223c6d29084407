package source

import (
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/podmanager"
)

// localAnnotations are set by the agent, not by the source: they are kept
// from the first sight of a pod and never count as a change.
var localAnnotations = [...]string{
	podmanager.ConfigSourceAnnotationKey,
	podmanager.ConfigMirrorAnnotationKey,
	podmanager.ConfigFirstSeenAnnotationKey,
}

func isLocalAnnotation(key string) bool {
	for _, k := range localAnnotations {
		if k == key {
			return true
		}
	}
	return false
}

// snapshot is the last merged state of one source. It has no lock: Config
// guards it.
type snapshot struct {
	seen bool
	pods map[types.UID]*v1.Pod
}

// changes is the outcome of merging one snapshot.
type changes struct {
	removes, adds, updates, deletes, reconciles []*v1.Pod
	firstSet                                    bool
}

// podUpdates returns the PodUpdates in emission order: REMOVE, ADD, UPDATE,
// DELETE, the empty ADD of a source's first snapshot when nothing else was
// added, updated or deleted, and RECONCILE.
func (c changes) podUpdates(source string) []PodUpdate {
	var out []PodUpdate
	emit := func(op Operation, pods []*v1.Pod) {
		if len(pods) > 0 {
			out = append(out, PodUpdate{Pods: pods, Op: op, Source: source})
		}
	}
	emit(REMOVE, c.removes)
	emit(ADD, c.adds)
	emit(UPDATE, c.updates)
	emit(DELETE, c.deletes)
	if c.firstSet && len(c.adds) == 0 && len(c.updates) == 0 && len(c.deletes) == 0 {
		out = append(out, PodUpdate{Pods: []*v1.Pod{}, Op: ADD, Source: source})
	}
	emit(RECONCILE, c.reconciles)
	return out
}

// merge diffs pods (a full snapshot of source) against s, stamps
// kubernetes.io/config.source on every pod and kubernetes.io/config.seen on
// pods seen for the first time, and replaces s's state. It takes ownership of
// pods and may modify them; it never modifies a pod already stored in s, as
// those have been handed out. A pod that is the very object stored for its
// UID is unchanged by definition and costs nothing. Pods without a UID and pods whose UID or full
// name repeats an earlier pod of the snapshot are passed to reject and
// dropped.
func (s *snapshot) merge(source string, pods []*v1.Pod, now time.Time, reject func(origin string, err error)) changes {
	ch := changes{firstSet: !s.seen}
	s.seen = true
	old := s.pods
	next := make(map[types.UID]*v1.Pod, len(pods))
	fullNames := make(map[string]types.UID, len(pods))
	for _, pod := range pods {
		if pod == nil {
			continue
		}
		fullName := podmanager.FullName(pod)
		if pod.UID == "" {
			reject(fullName, errorf(ErrInvalidPod, "metadata.uid: required"))
			continue
		}
		if uid, dup := fullNames[fullName]; dup {
			reject(fullName, errorf(ErrDuplicateFullName, "pod %s (uid %s) has the same name and namespace as pod uid %s earlier in the snapshot; dropped", fullName, pod.UID, uid))
			continue
		}
		if _, dup := next[pod.UID]; dup {
			reject(fullName, errorf(ErrDuplicateFullName, "pod %s repeats uid %s; dropped", fullName, pod.UID))
			continue
		}
		fullNames[fullName] = pod.UID
		existing, found := old[pod.UID]
		if found && existing == pod {
			// The source handed back the object it gave last time: unchanged,
			// and already stamped.
			next[pod.UID] = existing
			continue
		}
		if pod.Annotations == nil {
			pod.Annotations = make(map[string]string, 2)
		}
		pod.Annotations[podmanager.ConfigSourceAnnotationKey] = source

		if !found {
			if _, ok := pod.Annotations[podmanager.ConfigFirstSeenAnnotationKey]; !ok {
				pod.Annotations[podmanager.ConfigFirstSeenAnnotationKey] = now.UTC().Format(time.RFC3339Nano)
			}
			next[pod.UID] = pod
			ch.adds = append(ch.adds, pod)
			continue
		}
		switch {
		case !semanticallyEqual(existing, pod):
			keepLocalAnnotations(existing, pod)
			next[pod.UID] = pod
			if pod.DeletionTimestamp != nil {
				ch.deletes = append(ch.deletes, pod)
			} else {
				ch.updates = append(ch.updates, pod)
			}
		case !apiequality.Semantic.DeepEqual(existing.Status, pod.Status):
			keepLocalAnnotations(existing, pod)
			next[pod.UID] = pod
			ch.reconciles = append(ch.reconciles, pod)
		default:
			next[pod.UID] = existing
		}
	}
	for uid, pod := range old {
		if _, ok := next[uid]; !ok {
			ch.removes = append(ch.removes, pod)
		}
	}
	sort.Slice(ch.removes, func(i, j int) bool {
		return podmanager.FullName(ch.removes[i]) < podmanager.FullName(ch.removes[j])
	})
	s.pods = next
	return ch
}

// semanticallyEqual reports whether two versions of a pod ask for the same
// thing: spec, labels, deletion timestamp and grace period, and annotations
// other than the local ones. Status is not compared.
func semanticallyEqual(a, b *v1.Pod) bool {
	if !apiequality.Semantic.DeepEqual(a.Spec, b.Spec) {
		return false
	}
	if !stringMapsEqual(a.Labels, b.Labels) {
		return false
	}
	if !a.DeletionTimestamp.Equal(b.DeletionTimestamp) {
		return false
	}
	if !int64PtrEqual(a.DeletionGracePeriodSeconds, b.DeletionGracePeriodSeconds) {
		return false
	}
	return nonLocalAnnotationsEqual(a.Annotations, b.Annotations)
}

// keepLocalAnnotations copies the local annotations of the stored pod onto
// its new version (config.seen survives; config.source was just stamped).
func keepLocalAnnotations(existing, pod *v1.Pod) {
	for _, k := range localAnnotations {
		if k == podmanager.ConfigSourceAnnotationKey {
			continue
		}
		if v, ok := existing.Annotations[k]; ok {
			pod.Annotations[k] = v
		}
	}
}

func nonLocalAnnotationsEqual(a, b map[string]string) bool {
	count := 0
	for k, v := range a {
		if isLocalAnnotation(k) {
			continue
		}
		count++
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	for k := range b {
		if !isLocalAnnotation(k) {
			count--
		}
	}
	return count == 0
}

func stringMapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func int64PtrEqual(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
