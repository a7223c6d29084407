package volume_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/agent/volume"
	"github.com/podlife/podlife/test/apitest"
)

// Against the real control plane, with a node's credentials (Node
// authorizer, NodeRestriction): a ConfigMap volume of a pod bound to the
// node is set up and an update reaches its files within 10 s through the
// per-object watch; the API server's service-account volume gets a token
// that a TokenReview accepts as the pod's service account, bound to the
// pod, with ca.crt and the namespace.
func TestVolumesAgainstAPIServer(t *testing.T) {
	api := apitest.New(t)
	ctx := context.Background()
	const node = "vol-1"
	ns := api.Namespace(t)
	if _, err := api.Admin.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"k": "v1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := api.Admin.CoreV1().Pods(ns).Create(ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: v1.PodSpec{
			NodeName: node,
			Volumes:  []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}}},
			Containers: []v1.Container{{Name: "c", Image: "localhost/podlife/pause:1.0",
				VolumeMounts: []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := volume.New(volume.Options{Root: t.TempDir(), Client: api.NodeClient(t, node)})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- m.Run(runCtx) }()
	defer func() { cancel(); <-done }()

	var cfg string
	api.Eventually(t, 30*time.Second, "the ConfigMap volume (Run started, the node may read it)", func() (bool, error) {
		pv, err := m.SetUp(ctx, pod, &pod.Spec.Volumes[0])
		cfg = pv.HostPath
		return err == nil, err
	})
	if b, _ := os.ReadFile(filepath.Join(cfg, "k")); string(b) != "v1" {
		t.Fatalf("k = %q", b)
	}
	start := time.Now()
	if _, err := api.Admin.CoreV1().ConfigMaps(ns).Update(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"k": "v2"}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	api.Eventually(t, 10*time.Second, "the update in the file", func() (bool, error) {
		b, err := os.ReadFile(filepath.Join(cfg, "k"))
		return string(b) == "v2", err
	})
	t.Logf("update seen in the volume after %s", time.Since(start).Round(time.Millisecond))

	var sa *v1.Volume
	for i := range pod.Spec.Volumes {
		if strings.HasPrefix(pod.Spec.Volumes[i].Name, "kube-api-access-") {
			sa = &pod.Spec.Volumes[i]
		}
	}
	if sa == nil {
		t.Fatal("the API server added no kube-api-access volume")
	}
	pv, err := m.SetUp(ctx, pod, sa)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := os.ReadFile(filepath.Join(pv.HostPath, "token"))
	review, err := api.Admin.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: string(tok)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "system:serviceaccount:" + ns + ":default"; !review.Status.Authenticated || review.Status.User.Username != want {
		t.Errorf("token review: authenticated %v as %q, want %q (%s)", review.Status.Authenticated, review.Status.User.Username, want, review.Status.Error)
	}
	if uid := review.Status.User.Extra["authentication.kubernetes.io/pod-uid"]; len(uid) != 1 || uid[0] != string(pod.UID) {
		t.Errorf("token not bound to the pod: extra %v", review.Status.User.Extra)
	}
	if b, _ := os.ReadFile(filepath.Join(pv.HostPath, "ca.crt")); !strings.Contains(string(b), "BEGIN CERTIFICATE") {
		t.Errorf("ca.crt = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(pv.HostPath, "namespace")); string(b) != ns {
		t.Errorf("namespace = %q", b)
	}
	if err := m.TearDown(pod.UID); err != nil {
		t.Fatal(err)
	}
}
