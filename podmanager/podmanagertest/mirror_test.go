package podmanagertest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/podmanager"
)

func static(hash string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-n", Namespace: "default", UID: "s",
		Annotations: map[string]string{podmanager.ConfigSourceAnnotationKey: podmanager.FileSource, podmanager.ConfigHashAnnotationKey: hash}}}
}

func TestMirrorClientWithReconcile(t *testing.T) {
	ctx := t.Context()
	c := &MirrorClient{}
	if err := podmanager.ReconcileMirrorPod(ctx, c, static("h1"), nil); err != nil {
		t.Fatal(err)
	}
	first := c.Mirrors()[0]
	if !podmanager.IsMirrorPodOf(first, static("h1")) || !podmanager.IsMirrorPod(first) {
		t.Fatalf("mirror %+v", first.ObjectMeta)
	}
	if err := podmanager.ReconcileMirrorPod(ctx, c, static("h2"), first); err != nil {
		t.Fatal(err)
	}
	if got := c.Mirrors(); len(got) != 1 || !podmanager.IsMirrorPodOf(got[0], static("h2")) {
		t.Fatalf("mirrors after a hash change: %v", got)
	}
	// A delete with a stale UID does nothing.
	if ok, err := c.DeleteMirrorPod(ctx, "web-n_default", &first.UID); ok || err != nil {
		t.Fatalf("stale delete = %v, %v", ok, err)
	}
	want := []string{"create web-n_default", "delete web-n_default mirror-1", "create web-n_default", "delete web-n_default mirror-1"}
	if diff := cmp.Diff(want, c.Calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}
