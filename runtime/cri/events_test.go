package cri_test

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/podlife/podlife/runtime/fakecri"
)

// The adapter records the kubelet's container events, and one warning
// naming the pod-spec fields the pod runs without.
func TestEvents(t *testing.T) {
	_, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	rec := record.NewFakeRecorder(100)
	rt.SetRecorder(rec)
	pod := testPod("ev", v1.RestartPolicyAlways, v1.Container{Name: "c", Ports: []v1.ContainerPort{{ContainerPort: 80}}})
	pod.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}}}
	if err := rt.SyncPod(ctxT(t), pod, nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(rec.Events) > 0 {
		got = append(got, <-rec.Events)
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{
		"Warning UnsupportedPodFields podlife's CRI adapter runs this pod without: spec.volumes[0] (cfg).configMap: not supported by podlife's CRI adapter (emptyDir and hostPath are); not mounted; spec.containers[0].ports: not published",
		"Normal Pulling Pulling image",
		"Normal Pulled Successfully pulled image",
		"Normal Created Created container c",
		"Normal Started Started container c",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no event %q among:\n%s", want, all)
		}
	}
}

// A container that exits at once has its Started event too: it is recorded
// right after the start, as the kubelet does, not when a relist sees the
// container running (the e2e spec "Sysctls should support sysctls" waits
// for it, with a container that prints one line and exits).
func TestStartedEventOfAContainerThatExitsAtOnce(t *testing.T) {
	_, ep := startFake(t, fakecri.Options{})
	rt := newRuntime(t, ep)
	rec := record.NewFakeRecorder(100)
	rt.SetRecorder(rec)
	pod := testPod("quick", v1.RestartPolicyNever, v1.Container{Name: "c", Args: []string{"exit", "0"}})
	if err := rt.SyncPod(ctxT(t), pod, nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(rec.Events) > 0 {
		got = append(got, <-rec.Events)
	}
	if n := strings.Count(strings.Join(got, "\n"), "Normal Started Started container c"); n != 1 {
		t.Fatalf("%d Started events, want 1, among:\n%s", n, strings.Join(got, "\n"))
	}
}
