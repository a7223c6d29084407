package agent_test

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/go-logr/logr/testr"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/podmanager"
)

func TestAPIStatusReporter(t *testing.T) {
	ctx := context.Background()
	now := metav1.Now()
	apiPod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "default", UID: "api-uid",
		Annotations: map[string]string{podmanager.ConfigSourceAnnotationKey: podmanager.APISource}},
		Status: v1.PodStatus{Phase: v1.PodRunning}}
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "static-node1", Namespace: "default", UID: "static-uid",
		Annotations: map[string]string{podmanager.ConfigSourceAnnotationKey: podmanager.FileSource, podmanager.ConfigHashAnnotationKey: "static-uid"}}}
	mirror := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "static-node1", Namespace: "default", UID: "mirror-uid",
		Annotations: map[string]string{podmanager.ConfigMirrorAnnotationKey: "static-uid"}}}
	client := fake.NewClientset(apiPod.DeepCopy(), mirror.DeepCopy())
	could := couldRun{"api-uid": true, "static-uid": true}
	r, err := agent.NewAPIStatusReporter(could, agent.APIStatusReporterOptions{Client: client, Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) *v1.Pod {
		t.Helper()
		p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	// A terminal phase is held back while containers could run.
	if err := r.SetPodStatus(ctx, apiPod, nil, v1.PodStatus{Phase: v1.PodFailed, Reason: "Error"}); err != nil {
		t.Fatal(err)
	}
	if p := get("api"); p.Status.Phase != v1.PodRunning {
		t.Errorf("API phase while containers could run: %s, want Running", p.Status.Phase)
	}
	// A static pod's status goes to its mirror pod.
	if err := r.SetPodStatus(ctx, static, mirror, v1.PodStatus{Phase: v1.PodRunning}); err != nil {
		t.Fatal(err)
	}
	if p := get("static-node1"); p.Status.Phase != v1.PodRunning {
		t.Errorf("mirror phase: %q, want Running", p.Status.Phase)
	}
	// No mirror pod: nothing written, no error.
	if err := r.SetPodStatus(ctx, static, nil, v1.PodStatus{Phase: v1.PodPending}); err != nil {
		t.Errorf("static pod without mirror: %v", err)
	}

	// The API pod is being deleted: it goes only once finished.
	deleting := get("api")
	deleting.DeletionTimestamp = &now
	if _, err := client.CoreV1().Pods("default").Update(ctx, deleting, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	could["api-uid"], could["static-uid"] = false, false
	if err := r.PodFinished(ctx, apiPod, nil, v1.PodStatus{Phase: v1.PodFailed}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("default").Get(ctx, "api", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("finished deleted pod still in the API: %v", err)
	}
	// A finished static pod's mirror gets the final status and stays.
	if err := r.PodFinished(ctx, static, mirror, v1.PodStatus{Phase: v1.PodSucceeded}); err != nil {
		t.Fatal(err)
	}
	if p := get("static-node1"); p.Status.Phase != v1.PodSucceeded {
		t.Errorf("mirror final phase: %s, want Succeeded", p.Status.Phase)
	}
}
