package podmanager_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/podmanager"
)

func ExampleManager() {
	m := podmanager.New()

	// A static pod from a manifest, and its mirror pod from the API server.
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "etcd-node1", Namespace: "kube-system", UID: "3f2a",
		Annotations: map[string]string{
			podmanager.ConfigSourceAnnotationKey: podmanager.FileSource,
			podmanager.ConfigHashAnnotationKey:   "3f2a",
		},
	}}
	mirror := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "etcd-node1", Namespace: "kube-system", UID: "9c41",
		Annotations: map[string]string{
			podmanager.ConfigSourceAnnotationKey: podmanager.APISource,
			podmanager.ConfigMirrorAnnotationKey: "3f2a",
		},
	}}
	m.AddPod(static)
	m.AddPod(mirror)

	// Status updates for the mirror UID belong to the static pod.
	fmt.Println("mirror UID translates to", m.TranslatePodUID(mirror.UID))

	pod, mirrorPod, wasMirror := m.GetPodAndMirrorPod(mirror)
	fmt.Println(pod.UID, mirrorPod.UID, wasMirror, podmanager.IsMirrorPodOf(mirrorPod, pod))

	// The manifest is deleted: the mirror becomes an orphan to clean up.
	m.RemovePod(static)
	_, _, orphans := m.GetPodsAndMirrorPods()
	fmt.Println("orphaned mirrors:", orphans)
	// Output:
	// mirror UID translates to 3f2a
	// 3f2a 9c41 true true
	// orphaned mirrors: [etcd-node1_kube-system]
}
