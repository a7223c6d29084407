package podmanager

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Manager is the desired-state store of a node: every pod the agent has been
// told to run, indexed by UID and by full name, and the mirror pods of its
// static pods, indexed separately.
//
// Ownership: the Manager keeps the pointers it is given and hands the same
// pointers back. A pod passed to AddPod, UpdatePod or SetPods must not be
// modified afterwards, and a pod returned by a getter must be treated as
// read-only; to change a pod, pass a new object to UpdatePod. Returned slices
// and maps are fresh copies the caller owns.
//
// The zero value is not usable; call New. A Manager starts no goroutine and is
// safe for concurrent use.
type Manager struct {
	mu sync.RWMutex
	// podByUID holds regular and static pods, never mirror pods.
	podByUID map[types.UID]*v1.Pod
	// podByFullName holds regular and static pods by name_namespace.
	podByFullName map[string]*v1.Pod
	// mirrorPodByUID and mirrorPodByFullName hold mirror pods only.
	mirrorPodByUID      map[types.UID]*v1.Pod
	mirrorPodByFullName map[string]*v1.Pod
	// translationByUID maps a mirror pod's UID to its static pod's UID. An
	// entry exists while both halves of the pair are known.
	translationByUID map[types.UID]types.UID
}

// New returns an empty Manager.
func New() *Manager {
	m := &Manager{}
	m.resetLocked()
	return m
}

func (m *Manager) resetLocked() {
	m.podByUID = make(map[types.UID]*v1.Pod)
	m.podByFullName = make(map[string]*v1.Pod)
	m.mirrorPodByUID = make(map[types.UID]*v1.Pod)
	m.mirrorPodByFullName = make(map[string]*v1.Pod)
	m.translationByUID = make(map[types.UID]types.UID)
}

// SetPods replaces the whole content of the Manager with pods (regular,
// static and mirror pods mixed).
func (m *Manager) SetPods(pods []*v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.resetLocked()
	for _, pod := range pods {
		m.updatePodLocked(pod)
	}
}

// AddPod adds a pod, or replaces the pod with the same UID. It is the same as
// UpdatePod.
func (m *Manager) AddPod(pod *v1.Pod) { m.UpdatePod(pod) }

// UpdatePod stores pod under its UID and full name, replacing any pod already
// stored there. A mirror pod goes to the mirror indexes, and is paired with
// the static pod of the same full name.
func (m *Manager) UpdatePod(pod *v1.Pod) {
	if pod == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.updatePodLocked(pod)
}

func (m *Manager) updatePodLocked(pod *v1.Pod) {
	if pod == nil {
		return
	}
	fullName := FullName(pod)
	if IsMirrorPod(pod) {
		m.mirrorPodByUID[pod.UID] = pod
		m.mirrorPodByFullName[fullName] = pod
		if static, ok := m.podByFullName[fullName]; ok {
			m.translationByUID[pod.UID] = static.UID
		}
		return
	}
	m.podByUID[pod.UID] = pod
	m.podByFullName[fullName] = pod
	if mirror, ok := m.mirrorPodByFullName[fullName]; ok {
		m.translationByUID[mirror.UID] = pod.UID
	}
}

// RemovePod forgets pod. A full-name index entry is removed only when it
// still points to this pod's UID, so removing an old incarnation never
// removes a newer pod that reuses the name.
func (m *Manager) RemovePod(pod *v1.Pod) {
	if pod == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	fullName := FullName(pod)
	if IsMirrorPod(pod) {
		delete(m.mirrorPodByUID, pod.UID)
		delete(m.translationByUID, pod.UID)
		if cur, ok := m.mirrorPodByFullName[fullName]; ok && cur.UID == pod.UID {
			delete(m.mirrorPodByFullName, fullName)
		}
		return
	}
	delete(m.podByUID, pod.UID)
	if cur, ok := m.podByFullName[fullName]; ok && cur.UID == pod.UID {
		delete(m.podByFullName, fullName)
		if mirror, ok := m.mirrorPodByFullName[fullName]; ok {
			delete(m.translationByUID, mirror.UID)
		}
	}
}

// GetPods returns the regular and static pods; mirror pods are left out.
func (m *Manager) GetPods() []*v1.Pod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return podsFromMap(m.podByUID)
}

// GetPodsAndMirrorPods returns the regular and static pods, the mirror pods,
// and the full names of orphaned mirror pods: mirrors whose static pod is not
// (or no longer) known.
func (m *Manager) GetPodsAndMirrorPods() (pods, mirrorPods []*v1.Pod, orphanedMirrorPodFullNames []string) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	pods = podsFromMap(m.podByUID)
	mirrorPods = podsFromMap(m.mirrorPodByUID)
	for fullName := range m.mirrorPodByFullName {
		if _, ok := m.podByFullName[fullName]; !ok {
			orphanedMirrorPodFullNames = append(orphanedMirrorPodFullNames, fullName)
		}
	}
	return pods, mirrorPods, orphanedMirrorPodFullNames
}

// GetPodByUID returns the regular or static pod with this UID. Mirror pods
// are not found by UID; translate with TranslatePodUID first.
func (m *Manager) GetPodByUID(uid types.UID) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	pod, ok := m.podByUID[uid]
	return pod, ok
}

// GetPodByFullName returns the regular or static pod with this
// name_namespace.
func (m *Manager) GetPodByFullName(fullName string) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	pod, ok := m.podByFullName[fullName]
	return pod, ok
}

// GetPodByName returns the regular or static pod with this namespace and
// name.
func (m *Manager) GetPodByName(namespace, name string) (*v1.Pod, bool) {
	return m.GetPodByFullName(BuildFullName(name, namespace))
}

// GetMirrorPodByUID returns the mirror pod with this UID.
func (m *Manager) GetMirrorPodByUID(uid types.UID) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	pod, ok := m.mirrorPodByUID[uid]
	return pod, ok
}

// GetMirrorPodByPod returns the mirror pod with the same full name as the
// static pod. It does not check the hash; see IsMirrorPodOf.
func (m *Manager) GetMirrorPodByPod(pod *v1.Pod) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	mirror, ok := m.mirrorPodByFullName[FullName(pod)]
	return mirror, ok
}

// GetPodByMirrorPod returns the static pod with the same full name as the
// mirror pod.
func (m *Manager) GetPodByMirrorPod(mirrorPod *v1.Pod) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	pod, ok := m.podByFullName[FullName(mirrorPod)]
	return pod, ok
}

// GetPodAndMirrorPod returns the pair a pod belongs to. When pod is a mirror
// pod it returns (its static pod or nil, pod, true); otherwise (pod, its
// mirror pod or nil, false).
func (m *Manager) GetPodAndMirrorPod(pod *v1.Pod) (staticPod, mirrorPod *v1.Pod, wasMirror bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	fullName := FullName(pod)
	if IsMirrorPod(pod) {
		return m.podByFullName[fullName], pod, true
	}
	return pod, m.mirrorPodByFullName[fullName], false
}

// TranslatePodUID returns the UID of the static pod when uid is the UID of
// its mirror pod, and uid unchanged otherwise.
func (m *Manager) TranslatePodUID(uid types.UID) types.UID {
	if uid == "" {
		return uid
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if static, ok := m.translationByUID[uid]; ok {
		return static
	}
	return uid
}

// GetUIDTranslations returns both directions of the static ↔ mirror UID
// mapping. podToMirror has an entry for every static pod, "" when it has no
// mirror pod yet; mirrorToPod has an entry for every paired mirror pod.
func (m *Manager) GetUIDTranslations() (podToMirror, mirrorToPod map[types.UID]types.UID) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	podToMirror = make(map[types.UID]types.UID, len(m.translationByUID))
	mirrorToPod = make(map[types.UID]types.UID, len(m.translationByUID))
	for uid, pod := range m.podByUID {
		if IsStaticPod(pod) {
			podToMirror[uid] = ""
		}
	}
	for mirrorUID, staticUID := range m.translationByUID {
		podToMirror[staticUID] = mirrorUID
		mirrorToPod[mirrorUID] = staticUID
	}
	return podToMirror, mirrorToPod
}

// IsMirrorPodOf reports whether mirrorPod is the mirror of pod; see the
// package function IsMirrorPodOf.
func (m *Manager) IsMirrorPodOf(mirrorPod, pod *v1.Pod) bool { return IsMirrorPodOf(mirrorPod, pod) }

func podsFromMap(in map[types.UID]*v1.Pod) []*v1.Pod {
	out := make([]*v1.Pod, 0, len(in))
	for _, pod := range in {
		out = append(out, pod)
	}
	return out
}
