package podmanagertest

import (
	"context"
	"fmt"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/podmanager"
)

// MirrorClient is an in-memory podmanager.MirrorClient. The zero value is
// ready to use and safe for concurrent use.
type MirrorClient struct {
	mu sync.Mutex
	// CreateErr, when set, is returned by every CreateMirrorPod.
	CreateErr error
	// DeleteErr, when set, is returned by every DeleteMirrorPod.
	DeleteErr error
	mirrors   map[string]*v1.Pod // full name → mirror
	calls     []string
	nextUID   int
}

var _ podmanager.MirrorClient = (*MirrorClient)(nil)

// CreateMirrorPod stores a copy of pod with the mirror annotation and a
// fresh UID.
func (c *MirrorClient) CreateMirrorPod(_ context.Context, pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	fullName := podmanager.FullName(pod)
	c.calls = append(c.calls, "create "+fullName)
	if c.CreateErr != nil {
		return c.CreateErr
	}
	hash := podmanager.PodHash(pod)
	if existing, ok := c.mirrors[fullName]; ok {
		if h, _ := podmanager.MirrorHash(existing); h == hash {
			return nil
		}
		return fmt.Errorf("create mirror pod %q: already exists with another hash", fullName)
	}
	mirror := pod.DeepCopy()
	c.nextUID++
	mirror.UID = types.UID(fmt.Sprintf("mirror-%d", c.nextUID))
	if mirror.Annotations == nil {
		mirror.Annotations = map[string]string{}
	}
	mirror.Annotations[podmanager.ConfigMirrorAnnotationKey] = hash
	mirror.Annotations[podmanager.ConfigSourceAnnotationKey] = podmanager.APISource
	if c.mirrors == nil {
		c.mirrors = map[string]*v1.Pod{}
	}
	c.mirrors[fullName] = mirror
	return nil
}

// DeleteMirrorPod removes the mirror named fullName, if uid is nil or
// matches.
func (c *MirrorClient) DeleteMirrorPod(_ context.Context, fullName string, uid *types.UID) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	call := "delete " + fullName
	if uid != nil {
		call += " " + string(*uid)
	}
	c.calls = append(c.calls, call)
	if c.DeleteErr != nil {
		return false, c.DeleteErr
	}
	if _, _, err := podmanager.ParseFullName(fullName); err != nil {
		return false, err
	}
	existing, ok := c.mirrors[fullName]
	if !ok || (uid != nil && existing.UID != *uid) {
		return false, nil
	}
	delete(c.mirrors, fullName)
	return true, nil
}

// Mirrors returns copies of the stored mirror pods, sorted by full name.
func (c *MirrorClient) Mirrors() []*v1.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.mirrors))
	for n := range c.mirrors {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*v1.Pod, 0, len(names))
	for _, n := range names {
		out = append(out, c.mirrors[n].DeepCopy())
	}
	return out
}

// Calls returns the calls made so far ("create name_ns", "delete name_ns
// [uid]").
func (c *MirrorClient) Calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}
