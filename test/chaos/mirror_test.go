package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/podmanager"
)

// mirrorStore is the API server's side of mirror pods: the agents'
// MirrorClient writes here, and the soak adds the mirrors to the API pods it
// pushes through the channel source, as a real API source would list them.
// It outlives agent incarnations, as the API server does. Creations fail
// now and then (failRate), as API calls do.
type mirrorStore struct {
	mu       sync.Mutex
	mirrors  map[string]*v1.Pod // by full name
	version  uint64             // bumped by every change
	created  int
	deleted  int
	rng      *rand.Rand
	failRate float64
}

func newMirrorStore(seed uint64, failRate float64) *mirrorStore {
	return &mirrorStore{mirrors: map[string]*v1.Pod{}, rng: rand.New(rand.NewPCG(seed, 2)), failRate: failRate}
}

func (m *mirrorStore) client() podmanager.MirrorClient {
	return podmanager.MirrorClientFuncs{CreateMirrorPodFunc: m.create, DeleteMirrorPodFunc: m.delete}
}

func (m *mirrorStore) create(_ context.Context, pod *v1.Pod) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rng.Float64() < m.failRate {
		return fmt.Errorf("chaos: injected API error creating the mirror of %s", podmanager.FullName(pod))
	}
	full, hash := podmanager.FullName(pod), podmanager.PodHash(pod)
	if old, ok := m.mirrors[full]; ok {
		if old.Annotations[podmanager.ConfigMirrorAnnotationKey] == hash {
			return nil // the same mirror exists: success, as the contract says
		}
		return fmt.Errorf("chaos: mirror pod %s already exists with another hash", full)
	}
	mirror := pod.DeepCopy()
	m.created++
	mirror.UID = types.UID(fmt.Sprintf("mirror-%s-%d", pod.UID, m.created))
	mirror.Annotations = map[string]string{
		podmanager.ConfigMirrorAnnotationKey: hash,
		podmanager.ConfigSourceAnnotationKey: podmanager.APISource,
	}
	mirror.Status = v1.PodStatus{}
	m.mirrors[full] = mirror
	m.version++
	return nil
}

func (m *mirrorStore) delete(_ context.Context, fullName string, uid *types.UID) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.mirrors[fullName]
	if !ok || (uid != nil && old.UID != *uid) {
		return false, nil // gone, or replaced: not an error
	}
	delete(m.mirrors, fullName)
	m.deleted++
	m.version++
	return true, nil
}

// userDelete deletes the mirror of fullName as a user would in the API; the
// agent must create it again.
func (m *mirrorStore) userDelete(fullName string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.mirrors[fullName]; !ok {
		return false
	}
	delete(m.mirrors, fullName)
	m.version++
	return true
}

// snapshot returns the mirrors and the version they are at.
func (m *mirrorStore) snapshot() ([]*v1.Pod, uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pods := make([]*v1.Pod, 0, len(m.mirrors))
	for _, p := range m.mirrors {
		pods = append(pods, p)
	}
	return pods, m.version
}

// get returns the mirror of fullName.
func (m *mirrorStore) get(fullName string) (*v1.Pod, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.mirrors[fullName]
	return p, ok
}

func (m *mirrorStore) setFailRate(r float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failRate = r
}

// counts returns the mirrors created and deleted by agents.
func (m *mirrorStore) counts() (created, deleted int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.created, m.deleted
}
