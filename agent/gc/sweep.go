package gc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

func filepathIsAbs(p string) bool { return filepath.IsAbs(p) }

// orphanFolder is a pod folder that no worker knows and the runtime no
// longer has.
type orphanFolder struct {
	path string
	uid  types.UID
}

// findOrphanFolders lists, in each root, the subfolders named by a pod
// UID that neither the runtime (inRuntime) nor the pod workers know, and
// whose content may go. Entries that begin with a dot (runtime/cri's
// trash) and files are left alone. A root that does not exist has none.
func findOrphanFolders(roots []string, ps PodState, inRuntime map[types.UID]bool) ([]orphanFolder, error) {
	var out []orphanFolder
	var errs []error
	for _, root := range roots {
		entries, err := os.ReadDir(root)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("read pod folder root: %w", err))
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if !e.IsDir() || strings.HasPrefix(name, ".") {
				continue
			}
			uid := types.UID(name)
			if inRuntime[uid] || !orphaned(ps, uid) {
				continue
			}
			out = append(out, orphanFolder{path: filepath.Join(root, name), uid: uid})
		}
	}
	return out, errors.Join(errs...)
}

// orphaned reports whether no worker knows the pod (and the workers have
// been told the desired pods) and its content may go.
func orphaned(ps PodState, uid types.UID) bool {
	return !ps.IsPodKnownTerminated(uid) && !ps.CouldHaveRunningContainers(uid) && ps.ShouldPodContentBeRemoved(uid)
}

// removeFolder unmounts every mount at or under dir, deepest first, and
// then removes dir without ever crossing into another file system: a
// mount that could not be unmounted (or appeared meanwhile) makes it
// fail, and what is left stays for the next sweep.
func removeFolder(dir string, mounts func() ([]string, error)) error {
	under := func() ([]string, error) {
		all, err := mounts()
		if err != nil {
			return nil, fmt.Errorf("list mounts: %w", err)
		}
		var out []string
		for _, m := range all {
			if m == dir || strings.HasPrefix(m, dir+string(filepath.Separator)) {
				out = append(out, m)
			}
		}
		// Deepest first; a path mounted twice is unmounted twice.
		slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
		return out, nil
	}
	ms, err := under()
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range ms {
		errs = append(errs, unmount(m))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if len(ms) > 0 {
		if left, err := under(); err != nil {
			return err
		} else if len(left) > 0 {
			return fmt.Errorf("still mounted: %s", strings.Join(left, ", "))
		}
	}
	return removeOneFS(dir)
}

// removeOneFS removes dir and everything under it that is on dir's file
// system; a folder on another one (a mount) is not entered, and makes it
// fail. Symbolic links are removed, never followed.
func removeOneFS(dir string) error {
	dev, err := deviceOf(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var walk func(string) error
	walk = func(d string) error {
		entries, err := os.ReadDir(d)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		var errs []error
		for _, e := range entries {
			p := filepath.Join(d, e.Name())
			if e.IsDir() {
				sub, err := deviceOf(p)
				switch {
				case errors.Is(err, fs.ErrNotExist):
					continue
				case err != nil:
					errs = append(errs, err)
					continue
				case sub != dev:
					errs = append(errs, fmt.Errorf("%s is on another file system (a mount): not removed", p))
					continue
				}
				if err := walk(p); err != nil {
					errs = append(errs, err)
					continue
				}
			}
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	if err := walk(dir); err != nil {
		return err
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
