package agent_test

import (
	"context"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/podmanager/source"
	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime/fakecri"
)

// fakeAPI is the API server side of mirror pods: the MirrorClient records
// what the agent creates and deletes, and the test pushes the resulting pod
// list through an "api" Channel source, as the API source would.
type fakeAPI struct {
	mu      sync.Mutex
	mirrors map[string]*v1.Pod // by full name
	created int
	deleted []bool // per delete: was the static pod terminating then?
	workers func() podworker.PodWorkers
}

func (f *fakeAPI) client() podmanager.MirrorClient {
	return podmanager.MirrorClientFuncs{
		CreateMirrorPodFunc: func(_ context.Context, pod *v1.Pod) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			m := pod.DeepCopy()
			m.UID = "mirror-" + pod.UID
			m.Annotations = map[string]string{
				podmanager.ConfigMirrorAnnotationKey: podmanager.PodHash(pod),
				podmanager.ConfigSourceAnnotationKey: podmanager.APISource,
			}
			f.mirrors[podmanager.FullName(pod)] = m
			f.created++
			return nil
		},
		DeleteMirrorPodFunc: func(_ context.Context, fullName string, _ *types.UID) (bool, error) {
			terminating := f.workers().IsPodForMirrorPodTerminatingByFullName(fullName)
			f.mu.Lock()
			defer f.mu.Unlock()
			if _, ok := f.mirrors[fullName]; !ok {
				return false, nil
			}
			delete(f.mirrors, fullName)
			f.deleted = append(f.deleted, terminating)
			return true, nil
		},
	}
}

func (f *fakeAPI) snapshot() (pods []*v1.Pod, created, deleted int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.mirrors {
		pods = append(pods, m)
	}
	return pods, f.created, len(f.deleted)
}

// Static pods get mirror pods; a mirror deleted in the API is created
// again; an orphaned mirror is deleted only after its static pod stopped
// terminating.
func TestMirrorPods(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	dir := t.TempDir()
	writeManifest(t, dir, "web.yaml", manifest("web", 2, "hang"))
	api := &fakeAPI{mirrors: map[string]*v1.Pod{}}
	var channel *source.Channel
	ra := startAgentWith(t, endpoint, dir, func(o *agent.Options) {
		o.MirrorClient = api.client()
		apiChannel(o, &channel)
	})
	api.workers = func() podworker.PodWorkers { return ra.Workers() }
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	push := func() {
		t.Helper()
		pods, _, _ := api.snapshot()
		if err := channel.Push(ctx, pods); err != nil {
			t.Fatal(err)
		}
	}
	push() // the api source's first snapshot: empty

	web := ra.podUID(t, "web")
	waitRunning(t, ra, web)
	// Every sync before the mirror shows up in the API creates it (the
	// real API answers AlreadyExists with the same hash, counted as success).
	podworkertest.WaitFor(t, waitTimeout, "mirror created", func() bool { _, c, _ := api.snapshot(); return c >= 1 })
	push()
	podworkertest.WaitFor(t, waitTimeout, "mirror paired and counted", func() bool {
		_, paired := ra.PodManager().GetMirrorPodByPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-node1", Namespace: "default"}})
		return paired && series(t, ra.reg)[`kubelet_mirror_pods{}`] == 1
	})

	// The mirror is deleted in the API: the static pod is synced and the
	// mirror created again.
	api.mu.Lock()
	before := api.created
	delete(api.mirrors, "web-node1_default")
	api.mu.Unlock()
	push()
	podworkertest.WaitFor(t, waitTimeout, "mirror recreated", func() bool { _, c, _ := api.snapshot(); return c > before })
	push()

	// The static pod goes: its mirror is orphaned, and deleted only once
	// the static pod no longer terminates.
	removeManifest(t, dir, "web.yaml")
	podworkertest.WaitFor(t, waitTimeout, "orphaned mirror deleted", func() bool { _, _, d := api.snapshot(); return d == 1 })
	api.mu.Lock()
	if api.deleted[0] {
		t.Error("the mirror pod was deleted while its static pod was terminating")
	}
	api.mu.Unlock()
	waitGone(t, ra, web)
	push()
	podworkertest.WaitFor(t, waitTimeout, "no mirror counted", func() bool { return series(t, ra.reg)[`kubelet_mirror_pods{}`] == 0 })
}
