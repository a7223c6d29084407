package kubemirror

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podlife/podlife/podmanager"
)

const nodeName = "node1"

func testNode() *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, UID: "node-uid"}}
}

func staticPod(hash string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-node1", Namespace: "default", UID: types.UID(hash),
			Annotations: map[string]string{
				podmanager.ConfigSourceAnnotationKey: podmanager.FileSource,
				podmanager.ConfigHashAnnotationKey:   hash,
			},
		},
		Spec: v1.PodSpec{NodeName: nodeName, Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
	}
}

// newClient returns a Client on a fake clientset that assigns a fresh UID to
// every created pod, as the API server does.
func newClient(t *testing.T, objs ...kruntime.Object) (*Client, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	n := 0
	cs.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, kruntime.Object, error) {
		pod := action.(k8stesting.CreateAction).GetObject().(*v1.Pod)
		n++
		pod.UID = types.UID("mirror-uid-" + string(rune('0'+n)))
		return false, nil, nil
	})
	c, err := New(cs, Options{NodeName: nodeName})
	if err != nil {
		t.Fatal(err)
	}
	return c, cs
}

func getPod(t *testing.T, cs *fake.Clientset) *v1.Pod {
	t.Helper()
	pod, err := cs.CoreV1().Pods("default").Get(context.Background(), "web-node1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get mirror: %v", err)
	}
	return pod
}

func TestCreateMirrorPod(t *testing.T) {
	ctx := t.Context()
	c, cs := newClient(t, testNode())
	static := staticPod("h1")
	if err := c.CreateMirrorPod(ctx, static); err != nil {
		t.Fatal(err)
	}
	mirror := getPod(t, cs)
	if h, ok := podmanager.MirrorHash(mirror); !ok || h != "h1" {
		t.Errorf("mirror annotation = %q, %v", h, ok)
	}
	if !podmanager.IsMirrorPodOf(mirror, static) {
		t.Error("IsMirrorPodOf(created mirror, static) = false")
	}
	if mirror.UID == static.UID {
		t.Error("mirror kept the static pod's UID")
	}
	if len(mirror.OwnerReferences) != 1 {
		t.Fatalf("owner references = %v", mirror.OwnerReferences)
	}
	ref := mirror.OwnerReferences[0]
	if ref.Kind != "Node" || ref.Name != nodeName || ref.UID != "node-uid" || ref.Controller == nil || !*ref.Controller || ref.APIVersion != "v1" {
		t.Errorf("owner reference = %+v", ref)
	}
	if _, ok := static.Annotations[podmanager.ConfigMirrorAnnotationKey]; ok {
		t.Error("CreateMirrorPod modified the static pod")
	}

	// Same hash again: AlreadyExists is success.
	if err := c.CreateMirrorPod(ctx, static); err != nil {
		t.Errorf("create again with the same hash: %v", err)
	}
	// Another hash: AlreadyExists is an error.
	err := c.CreateMirrorPod(ctx, staticPod("h2"))
	if !apierrors.IsAlreadyExists(err) {
		t.Errorf("create with a stale mirror in place = %v, want AlreadyExists", err)
	}
}

func TestCreateMirrorPodNodeErrors(t *testing.T) {
	ctx := t.Context()
	t.Run("node missing", func(t *testing.T) {
		c, cs := newClient(t)
		err := c.CreateMirrorPod(ctx, staticPod("h1"))
		if !apierrors.IsNotFound(err) {
			t.Fatalf("err = %v, want NotFound", err)
		}
		if pods, _ := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); len(pods.Items) != 0 {
			t.Error("a mirror was created without a node")
		}
	})
	t.Run("node without UID", func(t *testing.T) {
		c, _ := newClient(t, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}})
		if err := c.CreateMirrorPod(ctx, staticPod("h1")); err == nil {
			t.Fatal("want error")
		}
	})
	t.Run("node being deleted", func(t *testing.T) {
		node := testNode()
		now := metav1.Now()
		node.DeletionTimestamp = &now
		node.Finalizers = []string{"x"}
		c, _ := newClient(t, node)
		if err := c.CreateMirrorPod(ctx, staticPod("h1")); !errors.Is(err, podmanager.ErrNodeBeingDeleted) {
			t.Fatalf("err = %v, want ErrNodeBeingDeleted", err)
		}
	})
}

func TestDeleteMirrorPod(t *testing.T) {
	ctx := t.Context()
	c, cs := newClient(t, testNode())
	if err := c.CreateMirrorPod(ctx, staticPod("h1")); err != nil {
		t.Fatal(err)
	}
	uid := getPod(t, cs).UID

	var seen metav1.DeleteOptions
	cs.PrependReactor("delete", "pods", func(action k8stesting.Action) (bool, kruntime.Object, error) {
		seen = action.(k8stesting.DeleteAction).GetDeleteOptions()
		return false, nil, nil
	})
	deleted, err := c.DeleteMirrorPod(ctx, "web-node1_default", &uid)
	if err != nil || !deleted {
		t.Fatalf("DeleteMirrorPod = %v, %v", deleted, err)
	}
	if seen.GracePeriodSeconds == nil || *seen.GracePeriodSeconds != 0 {
		t.Errorf("grace period = %v, want 0", seen.GracePeriodSeconds)
	}
	if seen.Preconditions == nil || seen.Preconditions.UID == nil || *seen.Preconditions.UID != uid {
		t.Errorf("preconditions = %+v, want UID %s", seen.Preconditions, uid)
	}

	// Already gone: not an error.
	deleted, err = c.DeleteMirrorPod(ctx, "web-node1_default", nil)
	if err != nil || deleted {
		t.Fatalf("DeleteMirrorPod of a missing pod = %v, %v", deleted, err)
	}
	if _, err := c.DeleteMirrorPod(ctx, "not-a-full-name", nil); err == nil {
		t.Error("malformed full name: want error")
	}
}

func TestDeleteMirrorPodErrors(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	tests := []struct {
		name    string
		err     error
		wantErr bool
	}{
		{"conflict (UID precondition)", apierrors.NewConflict(gr, "web-node1", errors.New("uid mismatch")), false},
		{"not found", apierrors.NewNotFound(gr, "web-node1"), false},
		{"server error", apierrors.NewInternalError(errors.New("boom")), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, cs := newClient(t, testNode())
			cs.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, kruntime.Object, error) {
				return true, nil, tc.err
			})
			uid := types.UID("x")
			deleted, err := c.DeleteMirrorPod(t.Context(), "web-node1_default", &uid)
			if deleted || (err != nil) != tc.wantErr {
				t.Fatalf("DeleteMirrorPod = %v, %v; want false, error %v", deleted, err, tc.wantErr)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := New(nil, Options{NodeName: "n"}); err == nil {
		t.Error("nil client: want error")
	}
	if _, err := New(fake.NewClientset(), Options{}); err == nil {
		t.Error("no node name: want error")
	}
}
