package status_test

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/podlife/podlife/agent/status"
	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/podmanager/kubemirror"
	"github.com/podlife/podlife/test/apitest"
)

// withStatic is the agent's view: the static pod from its manifest, the
// mirror pods from the watch.
type withStatic struct {
	static  *v1.Pod
	watched *podmanager.Manager
}

func (w withStatic) GetPodByUID(uid types.UID) (*v1.Pod, bool) {
	if uid == w.static.UID {
		return w.static, true
	}
	return w.watched.GetPodByUID(uid)
}

func (w withStatic) GetMirrorPodByPod(pod *v1.Pod) (*v1.Pod, bool) {
	return w.watched.GetMirrorPodByPod(pod)
}

// TestAPIStaticPodStatusGoesToItsMirror: with the node's credentials, the
// status of a static pod is written to its mirror pod, the mirror pod is
// never deleted even when the static pod finishes while being deleted, and
// a mirror pod deleted and made again gets the status.
func TestAPIStaticPodStatusGoesToItsMirror(t *testing.T) {
	api := apitest.New(t)
	const name = "status-t3"
	ensureNode(t, api, name)
	ns := api.Namespace(t)
	now := metav1.Now()
	static := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "static-" + name, Namespace: ns, UID: "static-uid-1",
			Annotations: map[string]string{
				podmanager.ConfigSourceAnnotationKey: podmanager.FileSource,
				podmanager.ConfigHashAnnotationKey:   "hash-1",
			},
			DeletionTimestamp: &now, // removed from its manifest folder
		},
		Spec: v1.PodSpec{NodeName: name, Containers: []v1.Container{{Name: "c", Image: "localhost/podlife/pause:1.0"}}},
	}
	nodeClient := kubernetes.NewForConfigOrDie(api.NodeConfig(t, name))
	mirrors, err := kubemirror.New(nodeClient, kubemirror.Options{NodeName: name})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mirrorFor := func() *v1.Pod {
		c := static.DeepCopy()
		c.DeletionTimestamp = nil
		if err := mirrors.CreateMirrorPod(ctx, c); err != nil {
			t.Fatal(err)
		}
		m, err := api.Admin.CoreV1().Pods(ns).Get(ctx, static.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	first := mirrorFor()

	n := startNode(t, api, name, api.NodeConfig(t, name), func(o *status.Options, watched *podmanager.Manager) {
		o.Pods = withStatic{static: static, watched: watched}
	})
	api.Eventually(t, 20*time.Second, "mirror seen by the watch", func() (bool, error) {
		m, ok := n.pods.GetMirrorPodByPod(static)
		return ok && m.UID == first.UID, nil
	})
	_ = n.m.SetPodStatus(ctx, static, nil, runningStatus(static, "static up"))
	api.Eventually(t, 20*time.Second, "status on the mirror", func() (bool, error) {
		m, err := api.Admin.CoreV1().Pods(ns).Get(ctx, static.Name, metav1.GetOptions{})
		return err == nil && m.Status.Message == "static up", err
	})

	// The mirror is deleted (by an admin) and made again: the new one gets
	// the status at a reconcile.
	zero := int64(0)
	if err := api.Admin.CoreV1().Pods(ns).Delete(ctx, static.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	_ = n.m.SetPodStatus(ctx, static, nil, runningStatus(static, "while no mirror"))
	api.Eventually(t, 20*time.Second, "old mirror gone", func() (bool, error) {
		_, err := api.Admin.CoreV1().Pods(ns).Get(ctx, static.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	second := mirrorFor()
	api.Eventually(t, 20*time.Second, "status on the new mirror", func() (bool, error) {
		m, err := api.Admin.CoreV1().Pods(ns).Get(ctx, static.Name, metav1.GetOptions{})
		return err == nil && m.UID == second.UID && m.Status.Message == "while no mirror", err
	})

	// Finished while being deleted: terminal status on the mirror, which
	// stays (the agent's mirror handling deletes it, not the status
	// manager).
	_ = n.m.PodFinished(ctx, static, nil, succeededStatus(static))
	api.Eventually(t, 20*time.Second, "terminal status on the mirror", func() (bool, error) {
		m, err := api.Admin.CoreV1().Pods(ns).Get(ctx, static.Name, metav1.GetOptions{})
		return err == nil && m.Status.Phase == v1.PodSucceeded, err
	})
	waitReconciles(t, api, n.m, 2)
	m, err := api.Admin.CoreV1().Pods(ns).Get(ctx, static.Name, metav1.GetOptions{})
	if err != nil || m.UID != second.UID || m.DeletionTimestamp != nil {
		t.Fatalf("mirror pod touched: %v %+v", err, m.ObjectMeta)
	}
	if n.m.IsGone(static.UID) {
		t.Fatal("the static pod was dropped")
	}
}
