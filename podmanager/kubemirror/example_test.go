package kubemirror_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/podmanager/kubemirror"
)

func ExampleClient() {
	ctx := context.Background()
	// A real agent passes a clientset built from its kubeconfig.
	cs := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", UID: "node-uid"}})
	mirrors, err := kubemirror.New(cs, kubemirror.Options{NodeName: "node1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	static := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-node1", Namespace: "kube-system", UID: "3f2a",
			Annotations: map[string]string{
				podmanager.ConfigSourceAnnotationKey: podmanager.FileSource,
				podmanager.ConfigHashAnnotationKey:   "3f2a",
			}},
		Spec: v1.PodSpec{NodeName: "node1", Containers: []v1.Container{{Name: "etcd", Image: "etcd"}}},
	}

	// On each sync of a static pod, with the mirror the pod manager knows.
	if err := podmanager.ReconcileMirrorPod(ctx, mirrors, static, nil); err != nil {
		fmt.Println(err)
		return
	}
	mirror, err := cs.CoreV1().Pods("kube-system").Get(ctx, "etcd-node1", metav1.GetOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("mirror of static pod:", podmanager.IsMirrorPodOf(mirror, static))
	fmt.Println("owner:", mirror.OwnerReferences[0].Kind, mirror.OwnerReferences[0].Name)

	// Housekeeping deletes an orphaned mirror by full name.
	deleted, err := mirrors.DeleteMirrorPod(ctx, podmanager.FullName(mirror), nil)
	fmt.Println("deleted:", deleted, err)
	// Output:
	// mirror of static pod: true
	// owner: Node node1
	// deleted: true <nil>
}
