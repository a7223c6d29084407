package kubemirror

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/podmanager"
)

// mirrorsIn returns the mirror pods stored in the fake API server.
func mirrorsIn(t *testing.T, c *Client) []v1.Pod {
	t.Helper()
	list, err := c.client.CoreV1().Pods("").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestReconcileScenarios drives podmanager.ReconcileMirrorPod and the
// housekeeping clean-up of orphans against the fake API server, with the
// pod manager fed as the API source would feed it.
func TestReconcileScenarios(t *testing.T) {
	ctx := t.Context()
	c, cs := newClient(t, testNode())
	m := podmanager.New()
	static := staticPod("h1")
	m.AddPod(static)

	// sync: no mirror yet → created.
	pod, mirror, _ := m.GetPodAndMirrorPod(static)
	if err := podmanager.ReconcileMirrorPod(ctx, c, pod, mirror); err != nil {
		t.Fatal(err)
	}
	first := getPod(t, cs)
	m.AddPod(first) // the API source reports it
	if got := m.TranslatePodUID(first.UID); got != static.UID {
		t.Fatalf("TranslatePodUID(mirror) = %q", got)
	}

	// sync with an up-to-date mirror: nothing happens.
	pod, mirror, _ = m.GetPodAndMirrorPod(static)
	if err := podmanager.ReconcileMirrorPod(ctx, c, pod, mirror); err != nil {
		t.Fatal(err)
	}
	if got := getPod(t, cs); got.UID != first.UID {
		t.Fatalf("mirror replaced without reason: %s → %s", first.UID, got.UID)
	}

	// Someone else deletes the mirror; the API source reports it gone.
	if err := cs.CoreV1().Pods("default").Delete(ctx, "web-node1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	m.RemovePod(first)
	pod, mirror, _ = m.GetPodAndMirrorPod(static)
	if err := podmanager.ReconcileMirrorPod(ctx, c, pod, mirror); err != nil {
		t.Fatal(err)
	}
	second := getPod(t, cs)
	if second.UID == first.UID {
		t.Fatal("mirror not recreated")
	}
	m.AddPod(second)

	// The manifest changes: new static pod (new hash); the mirror is stale,
	// deleted by UID and replaced.
	m.RemovePod(static)
	static2 := staticPod("h2")
	m.AddPod(static2)
	pod, mirror, _ = m.GetPodAndMirrorPod(static2)
	if mirror == nil || podmanager.IsMirrorPodOf(mirror, pod) {
		t.Fatalf("expected a stale mirror, got %v", mirror)
	}
	if err := podmanager.ReconcileMirrorPod(ctx, c, pod, mirror); err != nil {
		t.Fatal(err)
	}
	third := getPod(t, cs)
	if !podmanager.IsMirrorPodOf(third, static2) {
		t.Fatalf("mirror after reconcile has hash %q, want h2", third.Annotations[podmanager.ConfigMirrorAnnotationKey])
	}
	m.RemovePod(second)
	m.AddPod(third)

	// A mirror being deleted is replaced too.
	terminating := third.DeepCopy()
	now := metav1.Now()
	terminating.DeletionTimestamp = &now
	if err := podmanager.ReconcileMirrorPod(ctx, c, static2, terminating); err != nil {
		t.Fatal(err)
	}
	if got := getPod(t, cs); got.UID == third.UID {
		t.Fatal("mirror being deleted was not replaced")
	}

	// The manifest is removed: the mirror is an orphan and housekeeping
	// deletes it.
	m.SetPods([]*v1.Pod{getPod(t, cs)})
	_, _, orphans := m.GetPodsAndMirrorPods()
	if len(orphans) != 1 {
		t.Fatalf("orphans = %v", orphans)
	}
	for _, fullName := range orphans {
		deleted, err := c.DeleteMirrorPod(ctx, fullName, nil)
		if err != nil || !deleted {
			t.Fatalf("DeleteMirrorPod(%s) = %v, %v", fullName, deleted, err)
		}
	}
	if pods := mirrorsIn(t, c); len(pods) != 0 {
		t.Fatalf("pods left in the API: %d", len(pods))
	}
}

func TestReconcileSkips(t *testing.T) {
	ctx := t.Context()
	c, _ := newClient(t, testNode())

	api := staticPod("h1")
	api.Annotations[podmanager.ConfigSourceAnnotationKey] = podmanager.APISource
	if err := podmanager.ReconcileMirrorPod(ctx, c, api, nil); err != nil {
		t.Fatal(err)
	}
	deleting := staticPod("h1")
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	if err := podmanager.ReconcileMirrorPod(ctx, c, deleting, nil); err != nil {
		t.Fatal(err)
	}
	if pods := mirrorsIn(t, c); len(pods) != 0 {
		t.Fatalf("mirror created for an API pod or a static pod being deleted: %d", len(pods))
	}
}
