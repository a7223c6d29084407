package volume

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

func ptr[T any](v T) *T { return &v }

// startManager runs a Manager on a fake clientset until the test ends.
func startManager(t *testing.T, client *fake.Clientset) *Manager {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC))
	m, err := New(Options{Root: t.TempDir(), Client: client, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	// Run has started once it accepts watches.
	waitFor(t, "Run to start", func() bool {
		m.watcher.mu.Lock()
		defer m.watcher.mu.Unlock()
		return m.watcher.ctx != nil
	})
	return m
}

// waitFor waits for cond with a deadline (the condition, not a sleep, is
// what the test waits for).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func testPod(uid string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p-" + uid, UID: types.UID(uid)}, Spec: v1.PodSpec{ServiceAccountName: "sa"}}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestConfigMapVolumeItemsModesAndUpdates(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"},
		Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"bin": {0, 1}}})
	m := startManager(t, client)
	pod := testPod("u1")
	all := &v1.Volume{Name: "all", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, DefaultMode: ptr(int32(0o440))}}}
	items := &v1.Volume{Name: "items", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"},
		Items: []v1.KeyToPath{{Key: "a", Path: "dir/first"}, {Key: "b", Path: "second", Mode: ptr(int32(0o600))}}}}}
	pv, err := m.SetUp(ctx, pod, all)
	if err != nil {
		t.Fatal(err)
	}
	if !pv.ReadOnly || !strings.HasSuffix(pv.HostPath, "/u1/volumes/kubernetes.io~configmap/all") {
		t.Errorf("prepared %+v", pv)
	}
	if got := readFile(t, filepath.Join(pv.HostPath, "a")) + readFile(t, filepath.Join(pv.HostPath, "b")); got != "12" {
		t.Errorf("content %q", got)
	}
	if got := readFile(t, filepath.Join(pv.HostPath, "bin")); got != "\x00\x01" {
		t.Errorf("binaryData %q", got)
	}
	if got := mode(t, filepath.Join(pv.HostPath, "a")); got != 0o440 {
		t.Errorf("defaultMode gave %v", got)
	}
	pi, err := m.SetUp(ctx, pod, items)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(pi.HostPath, "dir/first")); got != "1" {
		t.Errorf("item path: %q", got)
	}
	if got := mode(t, filepath.Join(pi.HostPath, "second")); got != 0o600 {
		t.Errorf("item mode %v", got)
	}
	if _, err := os.Stat(filepath.Join(pi.HostPath, "a")); err == nil {
		t.Error("a key not in items was written")
	}
	if n := m.watcher.watching(); n != 1 {
		t.Errorf("%d watches for one ConfigMap", n)
	}

	// An update reaches both volumes through the watch.
	_, err = client.CoreV1().ConfigMaps("ns").Update(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"a": "new", "b": "2"}}, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the update", func() bool {
		return readFile(t, filepath.Join(pv.HostPath, "a")) == "new" && readFile(t, filepath.Join(pi.HostPath, "dir/first")) == "new"
	})
	if _, err := os.Stat(filepath.Join(pv.HostPath, "bin")); err == nil {
		t.Error("a key removed from the ConfigMap is still there")
	}

	// Deleted while mounted: the files stay.
	if err := client.CoreV1().ConfigMaps("ns").Delete(ctx, "cm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deletion to be seen", func() bool {
		_, err := m.watcher.get(ctx, objectKey{namespace: "ns", name: "cm"}, "u1")
		return err != nil
	})
	m.resync(ctx, true)
	if got := readFile(t, filepath.Join(pv.HostPath, "a")); got != "new" {
		t.Errorf("after deletion: %q, want the files kept", got)
	}

	if err := m.TearDown("u1"); err != nil {
		t.Fatal(err)
	}
	if n := m.watcher.watching(); n != 0 {
		t.Errorf("%d watches after the last pod went", n)
	}
	if _, err := os.Stat(filepath.Join(m.opts.Root, "u1")); !os.IsNotExist(err) {
		t.Errorf("pod folder left: %v", err)
	}
}

func TestWatchesAreCountedByPod(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"a": "1"}})
	m := startManager(t, client)
	v := &v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}}
	for _, uid := range []string{"u1", "u2"} {
		if _, err := m.SetUp(ctx, testPod(uid), v); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.watcher.watching(); n != 1 {
		t.Fatalf("%d watches", n)
	}
	if err := m.TearDown("u1"); err != nil {
		t.Fatal(err)
	}
	if n := m.watcher.watching(); n != 1 {
		t.Errorf("%d watches with one pod left", n)
	}
	if err := m.TearDown("u2"); err != nil {
		t.Fatal(err)
	}
	if n := m.watcher.watching(); n != 0 {
		t.Errorf("%d watches with no pod left", n)
	}
}

func TestMissingConfigMapThenCreated(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	m := startManager(t, client)
	pod := testPod("u1")
	v := &v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "later"}}}}
	_, err := m.SetUp(ctx, pod, v)
	if err == nil || err.Error() != `MountVolume.SetUp failed for volume "v" : configmap "later" not found` {
		t.Fatalf("missing: %v", err)
	}
	opt := &v1.Volume{Name: "opt", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "later"}, Optional: ptr(true)}}}
	if _, err := m.SetUp(ctx, pod, opt); err != nil {
		t.Errorf("optional and missing: %v", err)
	}
	if _, err := client.CoreV1().ConfigMaps("ns").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "later"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ConfigMap", func() bool { _, err := m.SetUp(ctx, pod, v); return err == nil })
	keyItem := &v1.Volume{Name: "key", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "later"}, Items: []v1.KeyToPath{{Key: "nope", Path: "x"}}}}}
	if _, err := m.SetUp(ctx, pod, keyItem); err == nil || !strings.Contains(err.Error(), "configmap references non-existent configmap key: nope") {
		t.Errorf("missing key: %v", err)
	}
}

func TestBadVolumeInput(t *testing.T) {
	ctx := context.Background()
	big := strings.Repeat("x", 1<<20)
	client := fake.NewClientset(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"k": "v", "big": big}})
	m := startManager(t, client)
	pod := testPod("u1")
	for name, src := range map[string]*v1.ConfigMapVolumeSource{
		"escape":   {Items: []v1.KeyToPath{{Key: "k", Path: "../../outside"}}},
		"absolute": {Items: []v1.KeyToPath{{Key: "k", Path: "/etc/passwd"}}},
		"mode":     {Items: []v1.KeyToPath{{Key: "k", Path: "k", Mode: ptr(int32(0o1000))}}},
		"default":  {DefaultMode: ptr(int32(-1))},
	} {
		src.Name = "cm"
		if _, err := m.SetUp(ctx, pod, &v1.Volume{Name: name, VolumeSource: v1.VolumeSource{ConfigMap: src}}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := os.Stat(filepath.Join(m.opts.Root, "u1", "volumes", "outside")); !os.IsNotExist(err) {
		t.Errorf("a file escaped: %v", err)
	}
	pv, err := m.SetUp(ctx, pod, &v1.Volume{Name: "big", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(pv.HostPath, "big")); !bytes.Equal(b, []byte(big)) {
		t.Errorf("1 MiB ConfigMap: %d bytes", len(b))
	}
	if _, err := m.SetUp(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "../x"}}, &v1.Volume{Name: "d", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{}}}); err == nil {
		t.Error("a UID leaving the root was accepted")
	}
}

// "should update labels/annotations on modification": a pod's new labels
// and annotations reach its downwardAPI volume after UpdatePod, without
// waiting for the resync (the fake clock never ticks here); a pod the
// Manager does not know is ignored.
func TestUpdatePodRewritesDownwardAPI(t *testing.T) {
	ctx := context.Background()
	m := startManager(t, fake.NewClientset())
	pod := testPod("u1")
	pod.Labels = map[string]string{"key1": "value1"}
	v := &v1.Volume{Name: "podinfo", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
		{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		{Path: "builder", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.annotations['builder']"}},
	}}}}
	pv, err := m.SetUp(ctx, pod, v)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(pv.HostPath, "labels")); got != `key1="value1"` {
		t.Fatalf("labels %q", got)
	}
	updated := pod.DeepCopy()
	updated.Labels["key3"] = "value3"
	updated.Annotations = map[string]string{"builder": "foo"}
	m.UpdatePod(updated)
	waitFor(t, "the new labels and annotations", func() bool {
		return readFile(t, filepath.Join(pv.HostPath, "labels")) == "key1=\"value1\"\nkey3=\"value3\"" &&
			readFile(t, filepath.Join(pv.HostPath, "builder")) == "foo"
	})
	m.UpdatePod(testPod("unknown"))
	m.mu.Lock()
	_, known := m.pods["unknown"]
	m.mu.Unlock()
	if known {
		t.Error("UpdatePod of an unknown pod remembered it")
	}
}

// TearDown removes the pod's volumes only: a runtime sharing the pod's
// folder (--root-dir: ROOT/pods/UID holds its logs too) keeps its files.
func TestTearDownKeepsOtherFilesOfThePodFolder(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"a": "1"}})
	m := startManager(t, client)
	v := &v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}}
	pv, err := m.SetUp(ctx, testPod("u1"), v)
	if err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(m.opts.Root, "u1", "logs", "main")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logs, "0.log"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.TearDown("u1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pv.HostPath); !os.IsNotExist(err) {
		t.Errorf("volume left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(m.opts.Root, "u1", "volumes")); !os.IsNotExist(err) {
		t.Errorf("empty volumes folder left: %v", err)
	}
	if got := readFile(t, filepath.Join(logs, "0.log")); got != "kept" {
		t.Errorf("the runtime's log: %q, want it kept", got)
	}
}

// A failing SetUp tells when the kubelet's volume manager would try again:
// 500 ms after the first failure in a row, doubling to at most 2 min 2 s,
// counted per volume; a success and a TearDown start the count again.
func TestSetUpFailureRetryHint(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	m := startManager(t, client)
	pod := testPod("u1")
	missing := func(name string) *v1.Volume {
		return &v1.Volume{Name: name, VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "later"}}}}
	}
	hint := func(v *v1.Volume) time.Duration {
		t.Helper()
		_, err := m.SetUp(ctx, pod, v)
		var ra interface{ RetryAfter() time.Duration }
		if !errors.As(err, &ra) {
			t.Fatalf("SetUp error %v has no retry hint", err)
		}
		return ra.RetryAfter()
	}
	v := missing("v")
	var got []time.Duration
	for range 10 {
		got = append(got, hint(v))
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, 32 * time.Second, 64 * time.Second, 122 * time.Second, 122 * time.Second}
	if !slices.Equal(got, want) {
		t.Fatalf("retry hints %v, want %v", got, want)
	}
	if d := hint(missing("other")); d != 500*time.Millisecond {
		t.Errorf("another volume's first failure: %v, want 500ms", d)
	}
	if _, err := client.CoreV1().ConfigMaps("ns").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "later"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ConfigMap", func() bool { _, err := m.SetUp(ctx, pod, v); return err == nil })
	if err := client.CoreV1().ConfigMaps("ns").Delete(ctx, "later", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := m.TearDown(pod.UID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ConfigMap gone", func() bool { _, err := m.SetUp(ctx, pod, v); return err != nil })
	if d := hint(v); d != time.Second {
		t.Errorf("after a success, a teardown and one failure: %v, want 1s (the second failure in a row)", d)
	}
	if err := m.TearDown(pod.UID); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	left := len(m.failures)
	m.mu.Unlock()
	if left != 0 {
		t.Errorf("failures of %d pods kept after their TearDown", left)
	}
}
