package source

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/podmanager"
)

func manifest(name, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  containers:
  - name: main
    image: %s
`, name, image)
}

// writeFile writes atomically (hidden temporary file, then rename), as
// careful tools do, so that the watcher never sees a half-written file.
func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	tmp := filepath.Join(dir, ".tmp-"+name)
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

type fileHarness struct {
	*consumer
	dir    string
	clock  *clocktesting.FakeClock
	errs   *errorLog
	source *File
}

func startFile(t *testing.T, dir string) *fileHarness {
	t.Helper()
	cfg, err := NewConfig(ConfigOptions{Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	h := &fileHarness{consumer: newConsumer(t, cfg), dir: dir, clock: clocktesting.NewFakeClock(t0), errs: newErrorLog()}
	h.source, err = NewFile(cfg.Sink(podmanager.FileSource), FileOptions{
		Path: dir, NodeName: "Node1", Clock: h.clock, Logger: testr.New(t), OnError: h.errs.onError,
	})
	if err != nil {
		t.Fatal(err)
	}
	runSource(t, h.source.Run)
	return h
}

// stepResync fires the periodic re-read. The source creates its ticker only
// after its first read (which is what makes it ready), so a step taken
// before the ticker exists would be lost: wait for the ticker first.
func (h *fileHarness) stepResync(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !h.clock.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the file source never armed its re-read ticker")
		}
		time.Sleep(time.Millisecond)
	}
	h.clock.Step(DefaultFileResync)
}

func TestFileSourceLifecycle(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "web.yaml", manifest("web", "nginx:1"))
	writeFile(t, dir, ".hidden.yaml", manifest("hidden", "nginx:1"))
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "sub"), "nested.yaml", manifest("nested", "nginx:1"))

	h := startFile(t, dir)
	h.waitNames("web-node1")
	<-h.cfg.Ready()

	web := h.byName("web-node1")
	t.Run("static pod defaults", func(t *testing.T) {
		if web.Namespace != "default" || web.Spec.NodeName != "Node1" {
			t.Errorf("namespace %q nodeName %q", web.Namespace, web.Spec.NodeName)
		}
		if web.UID == "" || podmanager.PodHash(web) != string(web.UID) {
			t.Errorf("uid %q hash %q", web.UID, podmanager.PodHash(web))
		}
		if !podmanager.IsStaticPod(web) || web.Annotations[podmanager.ConfigSourceAnnotationKey] != podmanager.FileSource {
			t.Errorf("annotations %v", web.Annotations)
		}
		if web.Annotations[podmanager.ConfigFirstSeenAnnotationKey] == "" {
			t.Error("config.seen not set")
		}
		if len(web.Spec.Tolerations) != 1 {
			t.Errorf("tolerations %v", web.Spec.Tolerations)
		}
	})

	// Create.
	writeFile(t, dir, "db.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"db","namespace":"data"},"spec":{"containers":[{"name":"pg","image":"postgres"}]}}`)
	h.waitNames("db-node1", "web-node1")

	// Edit without metadata.uid: a new incarnation (REMOVE old, ADD new).
	oldUID := web.UID
	writeFile(t, dir, "web.yaml", manifest("web", "nginx:2"))
	h.waitFor("web with a new UID", func() bool {
		p := h.byName("web-node1")
		return p != nil && p.UID != oldUID && len(h.pods) == 2
	})
	if got := h.byName("web-node1").Spec.Containers[0].Image; got != "nginx:2" {
		t.Errorf("image after edit = %q", got)
	}

	// Edit with metadata.uid: UPDATE of the same UID.
	withUID := func(image string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: fixed\n  uid: fixed-uid\nspec:\n  containers:\n  - name: c\n    image: %s\n", image)
	}
	writeFile(t, dir, "fixed.yaml", withUID("a"))
	h.waitNames("db-node1", "fixed-node1", "web-node1")
	writeFile(t, dir, "fixed.yaml", withUID("b"))
	h.waitFor("UPDATE of fixed", func() bool {
		last := h.history[len(h.history)-1]
		return last.Op == UPDATE && last.Pods[0].UID == "fixed-uid" && last.Pods[0].Spec.Containers[0].Image == "b"
	})

	// Rename: the origin is part of the UID, so it is a new pod.
	dbUID := h.byName("db-node1").UID
	if err := os.Rename(filepath.Join(dir, "db.json"), filepath.Join(dir, "database.json")); err != nil {
		t.Fatal(err)
	}
	h.waitFor("renamed db", func() bool {
		p := h.byName("db-node1")
		return p != nil && p.UID != dbUID && len(h.pods) == 3
	})

	// Delete.
	if err := os.Remove(filepath.Join(dir, "database.json")); err != nil {
		t.Fatal(err)
	}
	h.waitNames("fixed-node1", "web-node1")

	// A file that becomes invalid keeps its last good pod.
	goodUID := h.byName("web-node1").UID
	writeFile(t, dir, "web.yaml", "apiVersion: v1\nkind: Pod\nmetadata: [not, a, map\n")
	e := h.errs.waitFor(t, ErrDecode)
	if e.Origin != filepath.Join(dir, "web.yaml") || e.Source != podmanager.FileSource {
		t.Errorf("error origin %q source %q", e.Origin, e.Source)
	}
	// A full re-read (fake clock) neither reports it again (once per change
	// of its content) nor drops it.
	reported := h.errs.count()
	h.stepResync(t)
	writeFile(t, dir, "other.yaml", manifest("other", "x")) // a marker change
	h.waitNames("fixed-node1", "other-node1", "web-node1")
	if got := h.byName("web-node1").UID; got != goodUID {
		t.Errorf("web UID changed to %q while its file was invalid", got)
	}
	if got := h.errs.count(); got != reported {
		t.Errorf("the unchanged bad file was reported again at a re-read: %d reports, want %d", got, reported)
	}
	// Another bad content is a change: reported once more.
	writeFile(t, dir, "web.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: []}\n")
	h.errs.waitFor(t, ErrInvalidPod)
	if got := h.source.Errors(); got != uint64(h.errs.count()) {
		t.Errorf("Errors() = %d, OnError called %d times", got, h.errs.count())
	}
}

func TestFileSourceRejectsBadManifests(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    error
	}{
		{"not yaml", "{{{{", ErrDecode},
		{"empty", "", ErrDecode},
		{"not a pod", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", ErrNotPod},
		{"no kind", "metadata:\n  name: x\n", ErrNotPod},
		{"no containers", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec: {}\n", ErrInvalidPod},
		{"duplicate containers", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n  - {name: a, image: i}\n  - {name: a, image: i}\n", ErrInvalidPod},
		{"invalid name", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: Bad_Name\nspec:\n  containers:\n  - {name: a, image: i}\n", ErrInvalidPod},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "good.yaml", manifest("good", "nginx"))
			writeFile(t, dir, "bad.yaml", tc.content)
			h := startFile(t, dir)
			h.waitNames("good-node1")
			e := h.errs.waitFor(t, tc.want)
			if e.Origin != filepath.Join(dir, "bad.yaml") {
				t.Errorf("origin = %q", e.Origin)
			}
			if h.source.Errors() == 0 {
				t.Error("Errors() = 0")
			}
		})
	}
}

func TestFileSourceDuplicateNames(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", manifest("web", "one"))
	writeFile(t, dir, "b.yaml", manifest("web", "two"))
	errs := newErrorLog()
	cfg, err := NewConfig(ConfigOptions{OnError: errs.onError})
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFile(cfg.Sink(podmanager.FileSource), FileOptions{Path: dir, NodeName: "n", Clock: clocktesting.NewFakeClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	c := newConsumer(t, cfg)
	runSource(t, f.Run)
	c.waitNames("web-n")
	if got := c.byName("web-n").Spec.Containers[0].Image; got != "one" {
		t.Errorf("kept %q, want the first file's pod", got)
	}
	e := errs.waitFor(t, ErrDuplicateFullName)
	if e.Origin != "web-n_default" {
		t.Errorf("origin %q", e.Origin)
	}
}

func TestFileSourceMissingFolderThenCreated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	h := startFile(t, dir)
	// The first (empty) snapshot makes the source ready.
	select {
	case <-h.cfg.Ready():
	case <-time.After(waitTimeout):
		t.Fatal("not ready with a missing folder")
	}
	h.drain()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "web.yaml", manifest("web", "nginx"))
	// Nothing watches the folder yet: the periodic re-read finds it.
	h.stepResync(t)
	h.waitNames("web-node1")
	// The watch was set up on that tick, before the re-read.
	writeFile(t, dir, "db.yaml", manifest("db", "pg"))
	h.waitNames("db-node1", "web-node1")
}

func TestFileSourceBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("burst of 1,000 files")
	}
	dir := t.TempDir()
	h := startFile(t, dir)
	<-h.cfg.Ready()
	const n = 1000
	for i := 0; i < n; i++ {
		writeFile(t, dir, fmt.Sprintf("p%04d.yaml", i), manifest(fmt.Sprintf("p%04d", i), "img"))
	}
	h.waitFor("1000 pods", func() bool { return len(h.pods) == n })
	for i := 0; i < n; i += 2 {
		if err := os.Remove(filepath.Join(dir, fmt.Sprintf("p%04d.yaml", i))); err != nil {
			t.Fatal(err)
		}
	}
	h.waitFor("500 pods", func() bool { return len(h.pods) == n/2 })
	if got := h.source.Errors(); got != 0 {
		t.Errorf("Errors() = %d", got)
	}
}

func TestNewFileValidates(t *testing.T) {
	sink := SinkFunc(nil)
	tests := []struct {
		name string
		opts FileOptions
	}{
		{"no path", FileOptions{NodeName: "n"}},
		{"no node", FileOptions{Path: "/x"}},
		{"bad node", FileOptions{Path: "/x", NodeName: "a b"}},
		{"negative resync", FileOptions{Path: "/x", NodeName: "n", ResyncInterval: -time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewFile(sink, tc.opts); err == nil {
				t.Error("want error")
			}
		})
	}
	if _, err := NewFile(nil, FileOptions{Path: "/x", NodeName: "n"}); err == nil {
		t.Error("nil sink: want error")
	}
}

func TestFileSourceSingleFile(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "web.yaml", manifest("web", "nginx:1"))
	writeFile(t, dir, "other.yaml", manifest("other", "x"))
	h := startFile(t, filepath.Join(dir, "web.yaml"))
	h.waitNames("web-node1")
	// Replaced the way editors do it (write elsewhere, rename over).
	writeFile(t, dir, "web.yaml", manifest("web", "nginx:2"))
	h.waitFor("edited web", func() bool {
		p := h.byName("web-node1")
		return p != nil && p.Spec.Containers[0].Image == "nginx:2" && len(h.pods) == 1
	})
	if err := os.Remove(filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	h.waitNames()
	// The watch survived the removal.
	writeFile(t, dir, "web.yaml", manifest("web", "nginx:3"))
	h.waitNames("web-node1")
}

func TestFileSourceFolderRemovedAndRecreated(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "manifests")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "web.yaml", manifest("web", "nginx"))
	h := startFile(t, dir)
	h.waitNames("web-node1")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	h.waitNames()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "db.yaml", manifest("db", "pg"))
	h.stepResync(t)
	h.waitNames("db-node1")
	writeFile(t, dir, "web.yaml", manifest("web", "nginx"))
	h.waitNames("db-node1", "web-node1")
}
