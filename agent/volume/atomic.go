package volume

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// File is one file of a volume's payload: its content and permission
// bits (0 to 0777), and the user that owns it when not the writer.
type File struct {
	Data []byte
	Mode fs.FileMode
	// FsUser, when set, owns the file (the kubelet gives a projected
	// service-account token to the user all the pod's containers run as).
	FsUser *int64
}

// Names of the atomic writer's own entries in a volume folder (the
// kubelet's): ..data is a symbolic link to the current timestamped
// folder, ..data_tmp the link being made.
const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
	// tsPrefix + time starts a timestamped folder's name.
	tsLayout = "..2006_01_02_15_04_05."
)

// Limits of a payload path, the kubelet's.
const (
	maxPathLength    = 4096
	maxSegmentLength = 255
)

// ValidatePath refuses a payload path that is empty, absolute, has a ".."
// element, starts with ".." (the writer's own names), or is too long.
func ValidatePath(p string) error {
	switch {
	case p == "":
		return errors.New("invalid path: must not be empty")
	case len(p) > maxPathLength:
		return fmt.Errorf("invalid path: must be less than or equal to %d characters", maxPathLength)
	case filepath.IsAbs(p):
		return fmt.Errorf("invalid path %q: must be relative path", p)
	case strings.HasPrefix(p, ".."):
		return fmt.Errorf("invalid path %q: must not start with '..'", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return fmt.Errorf("invalid path %q: must not contain '..'", p)
		}
		if len(seg) > maxSegmentLength {
			return fmt.Errorf("invalid path %q: segments must be less than or equal to %d characters", p, maxSegmentLength)
		}
	}
	return nil
}

// WriteAtomic makes folder dir hold exactly payload, so that a reader
// never sees half an update (the kubelet's AtomicWriter): the files are
// written into a new timestamped folder (named from now), a ..data_tmp
// symbolic link to it is renamed over ..data, and each top-level name of
// the payload is a symbolic link through ..data (name → ..data/name);
// then the names no longer in the payload and the old folder are
// removed. A payload equal to the current content changes nothing and
// reports false. dir is made when missing (mode 0755). Writers of one
// dir must not overlap (the Manager serializes them); readers may read at
// any time.
func WriteAtomic(dir string, payload map[string]File, now time.Time) (changed bool, err error) {
	return WriteAtomicOwned(dir, payload, now, Ownership{})
}

// WriteAtomicOwned is WriteAtomic for a volume of a pod with an fsGroup:
// once the new folder is written, and before it becomes current, own is
// applied to the whole of dir (the kubelet's SetVolumeOwnership, which it
// runs at the same point), so that the files a reader sees already have
// their group and modes. A payload whose files have the content, the
// modes (with own's bits) and the group already changes nothing.
func WriteAtomicOwned(dir string, payload map[string]File, now time.Time, own Ownership) (changed bool, err error) {
	for p, f := range payload {
		if err := ValidatePath(p); err != nil {
			return false, err
		}
		if f.Mode&^fs.ModePerm != 0 {
			return false, fmt.Errorf("file %q: mode %#o out of range (0 to 0777)", p, uint32(f.Mode))
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	oldTS, err := os.Readlink(filepath.Join(dir, dataDirName))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read %s: %w", dataDirName, err)
	}
	if oldTS != "" && sameContent(filepath.Join(dir, oldTS), payload, own) {
		return false, nil
	}
	tsDir, err := os.MkdirTemp(dir, now.UTC().Format(tsLayout))
	if err != nil {
		return false, err
	}
	tsName := filepath.Base(tsDir)
	if err := writePayload(tsDir, payload); err != nil {
		_ = os.RemoveAll(tsDir)
		return false, err
	}
	if err := own.Apply(dir); err != nil {
		_ = os.RemoveAll(tsDir)
		return false, err
	}
	tmpLink := filepath.Join(dir, newDataDirName)
	_ = os.Remove(tmpLink)
	if err := os.Symlink(tsName, tmpLink); err != nil {
		_ = os.RemoveAll(tsDir)
		return false, err
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataDirName)); err != nil {
		_ = os.Remove(tmpLink)
		_ = os.RemoveAll(tsDir)
		return false, err
	}
	if err := linkUserVisible(dir, payload); err != nil {
		return true, err
	}
	// The folder ..data pointed to until now is kept until the next
	// update: a reader that resolved ..data just before the swap still
	// finds its files (removing it at once, as the kubelet does, lets such
	// a reader see no file at all). Older ones go.
	return true, removeOldVersions(dir, tsName, oldTS)
}

// removeOldVersions removes the timestamped folders of dir but keep.
func removeOldVersions(dir string, keep ...string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, "..") || name == dataDirName || name == newDataDirName || slices.Contains(keep, name) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// writePayload writes the files under root, making their folders (0755).
// The mode is set after writing, so that the umask does not narrow it.
func writePayload(root string, payload map[string]File) error {
	if err := os.Chmod(root, 0o755); err != nil {
		return err
	}
	for p, f := range payload {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, f.Data, f.Mode); err != nil {
			return err
		}
		if f.FsUser != nil {
			if err := os.Lchown(full, int(*f.FsUser), -1); err != nil {
				return err
			}
		}
		if err := os.Chmod(full, f.Mode); err != nil {
			return err
		}
	}
	return nil
}

// topLevel is the first element of a payload path.
func topLevel(p string) string {
	first, _, _ := strings.Cut(p, "/")
	return first
}

// linkUserVisible links each top-level name of the payload through ..data
// and removes the other names (not the writer's own, "..*").
func linkUserVisible(dir string, payload map[string]File) error {
	want := map[string]bool{}
	for p := range payload {
		want[topLevel(p)] = true
	}
	for name := range want {
		link := filepath.Join(dir, name)
		target := filepath.Join(dataDirName, name)
		if cur, err := os.Readlink(link); err == nil && cur == target {
			continue
		}
		if err := os.RemoveAll(link); err != nil {
			return err
		}
		if err := os.Symlink(target, link); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") || want[e.Name()] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// sameContent reports whether folder ts holds exactly payload (content
// and modes, with own's group and bits).
func sameContent(ts string, payload map[string]File, own Ownership) bool {
	var have []string
	err := filepath.WalkDir(ts, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(ts, p)
			have = append(have, rel)
		}
		return nil
	})
	if err != nil || len(have) != len(payload) {
		return false
	}
	sort.Strings(have)
	for _, p := range have {
		f, ok := payload[p]
		if !ok {
			return false
		}
		full := filepath.Join(ts, p)
		fi, err := os.Stat(full)
		if err != nil || fi.Mode().Perm() != own.Mode(f.Mode).Perm() || !own.has(fi) || !ownedBy(fi, f.FsUser) {
			return false
		}
		b, err := os.ReadFile(full)
		if err != nil || !bytes.Equal(b, f.Data) {
			return false
		}
	}
	return true
}
