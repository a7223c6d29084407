package volume

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// tree lists dir's user-visible names with their link targets and the
// content and mode of what they resolve to.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		link, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatalf("%s is not a symbolic link: %v", e.Name(), err)
		}
		out["link "+e.Name()] = link
	}
	_ = filepath.WalkDir(filepath.Join(dir, dataDirName)+"/", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			fi, _ := os.Stat(p)
			rel, _ := filepath.Rel(filepath.Join(dir, dataDirName)+"/", p)
			out["file "+rel] = fi.Mode().Perm().String() + " " + string(b)
		}
		return nil
	})
	return out
}

func TestWriteAtomicLayoutAndUpdates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	now := time.Date(2026, 12, 4, 15, 0, 0, 0, time.UTC)
	changed, err := WriteAtomic(dir, map[string]File{
		"a":         {Data: []byte("1"), Mode: 0o644},
		"sub/dir/b": {Data: []byte("2"), Mode: 0o400},
		"exec":      {Data: []byte("3"), Mode: 0o755},
	}, now)
	if err != nil || !changed {
		t.Fatalf("first write: %v, %v", changed, err)
	}
	want := map[string]string{
		"link a": "..data/a", "link sub": "..data/sub", "link exec": "..data/exec",
		"file a": "-rw-r--r-- 1", "file sub/dir/b": "-r-------- 2", "file exec": "-rwxr-xr-x 3",
	}
	if d := cmp.Diff(want, tree(t, dir)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	ts1, _ := os.Readlink(filepath.Join(dir, dataDirName))
	if !strings.HasPrefix(ts1, "..2026_12_04_15_00_00.") {
		t.Errorf("..data -> %q, want a timestamped folder", ts1)
	}

	// The same payload: nothing changes.
	if changed, err := WriteAtomic(dir, map[string]File{"a": {Data: []byte("1"), Mode: 0o644}, "sub/dir/b": {Data: []byte("2"), Mode: 0o400}, "exec": {Data: []byte("3"), Mode: 0o755}}, now); err != nil || changed {
		t.Errorf("same payload: changed %v, %v", changed, err)
	}
	// A mode change is a change; a removed key goes; the old folder goes.
	if changed, err := WriteAtomic(dir, map[string]File{"a": {Data: []byte("1"), Mode: 0o600}}, now.Add(time.Second)); err != nil || !changed {
		t.Fatalf("update: %v, %v", changed, err)
	}
	if d := cmp.Diff(map[string]string{"link a": "..data/a", "file a": "-rw------- 1"}, tree(t, dir)); d != "" {
		t.Errorf("after update (-want +got):\n%s", d)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	// The removed names are gone; the previous version's folder stays
	// until the next update (a reader that resolved ..data just before the
	// swap still finds its files).
	if len(names) != 4 || names[0] != ts1 || !strings.HasPrefix(names[1], "..2026_12_04_15_00_01.") || names[2] != dataDirName || names[3] != "a" {
		t.Errorf("entries after update: %q (want the previous and the new folder, ..data and a)", names)
	}
	// An empty payload empties the volume; the first folder is gone now.
	if _, err := WriteAtomic(dir, map[string]File{}, now.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, dir); len(got) != 0 {
		t.Errorf("empty payload left %v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, ts1)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the first version's folder is still there two updates later: %v", err)
	}
}

func TestWriteAtomicRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		path string
		mode fs.FileMode
	}{
		{"/abs", 0o644}, {"../escape", 0o644}, {"a/../../escape", 0o644}, {"..data", 0o644}, {"..x", 0o644}, {"", 0o644},
		{strings.Repeat("x", 256), 0o644}, {strings.Repeat("x/", 2049), 0o644},
		{"ok", 0o1777}, {"ok", fs.ModeSetuid | 0o755},
	} {
		if _, err := WriteAtomic(dir, map[string]File{tc.path: {Data: []byte("x"), Mode: tc.mode}}, time.Now()); err == nil {
			t.Errorf("path %.20q mode %v: accepted", tc.path, tc.mode)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused payload wrote %d entries", len(entries))
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("something escaped the volume: %v", err)
	}
}

// A reader that keeps reading a file while it is rewritten sees one
// whole version or another, never a mix, a short file or no file.
func TestWriteAtomicReaderNeverSeesHalfAnUpdate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	version := func(i int) map[string]File {
		return map[string]File{"big": {Data: bytes.Repeat([]byte{byte('a' + i%26)}, 256<<10), Mode: 0o644}}
	}
	if _, err := WriteAtomic(dir, version(0), time.Now()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var bad []string
	var mu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			b, err := os.ReadFile(filepath.Join(dir, "big"))
			ok := err == nil && len(b) == 256<<10 && bytes.Count(b, b[:1]) == len(b)
			if !ok {
				mu.Lock()
				bad = append(bad, errString(err, b))
				mu.Unlock()
			}
		}
	}()
	base := time.Now()
	for i := 1; i <= 200; i++ {
		if _, err := WriteAtomic(dir, version(i), base.Add(time.Duration(i)*time.Millisecond)); err != nil {
			t.Error(err)
			break
		}
	}
	cancel()
	wg.Wait()
	if len(bad) > 0 {
		t.Errorf("%d torn reads, first: %s", len(bad), bad[0])
	}
}

func errString(err error, b []byte) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("read %d bytes, not one whole version", len(b))
}
