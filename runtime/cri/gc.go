package cri

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/podlife/podlife/runtime"
)

// RemoveContainer removes one container that no longer runs, with its
// files: its CRI log file and the files a log rotation made of it
// (LOG.STAMP, LOG.STAMP.gz), and its termination-message file, as the
// kubelet's removeContainer (which deletes the logs before the container).
// Only files under VolumeRoot are deleted. A container that vanished
// counts as removed; its files, which can no longer be found, go with the
// pod's folder. Container garbage collection (agent/gc) calls it.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	st, err := r.containerStatus(ctx, id)
	if errors.Is(err, runtime.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove container %q: %w", id, err)
	}
	var files []string
	if p := st.GetLogPath(); p != "" {
		files = append(files, p)
		rotated, _ := filepath.Glob(globEscape(p) + ".*")
		files = append(files, rotated...)
	}
	if p := st.GetAnnotations()[AnnotationTerminationMessageHostPath]; p != "" {
		files = append(files, p)
	}
	var errs []error
	for _, f := range files {
		if !r.underVolumeRoot(f) {
			continue
		}
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		// As the kubelet: a container whose logs cannot be deleted is
		// kept, so that they are tried again with it.
		return fmt.Errorf("remove container %q: its files: %w", id, err)
	}
	return r.removeContainer(ctx, id)
}

// RemoveSandbox stops and removes one sandbox, as the kubelet's container
// garbage collection does with a dead sandbox (it stops it first, in case
// it was never stopped). A sandbox that vanished counts as removed.
func (r *Runtime) RemoveSandbox(ctx context.Context, id string) error {
	if err := r.stopSandbox(ctx, id); err != nil {
		return err
	}
	return r.removeSandbox(ctx, id)
}

// VolumeRoot returns Options.VolumeRoot (defaulted), the folder of the
// pods' own folders (VolumeRoot/UID), where their emptyDirs and logs are:
// for the sweep of orphaned pod folders and the disk usage an eviction
// manager measures.
func (r *Runtime) VolumeRoot() string { return r.opts.VolumeRoot }

// underVolumeRoot reports whether path lies inside VolumeRoot.
func (r *Runtime) underVolumeRoot(path string) bool {
	rel, err := filepath.Rel(r.opts.VolumeRoot, path)
	return err == nil && rel != "." && !filepath.IsAbs(rel) && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// globEscape escapes the characters filepath.Match treats specially.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
