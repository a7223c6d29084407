package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/podmanager"
)

// DefaultFileResync is the default period of the file source's full re-read.
const DefaultFileResync = 20 * time.Second

// FileOptions configures a File source.
type FileOptions struct {
	// Path is a folder of manifests (one pod per file, YAML or JSON; hidden
	// files and sub-folders are ignored) or a single manifest file.
	// Required.
	Path string
	// NodeName is this node's name: static pods are named
	// <name>-<nodeName> and bound to it. Required; a DNS-1123 subdomain.
	NodeName string
	// ResyncInterval is the period of the full re-read that backs up the
	// watch. Default 20s.
	ResyncInterval time.Duration
	// Clock drives the re-read ticker and nothing else. Default: the real
	// clock.
	Clock clock.WithTicker
	// Logger: errors for rejected manifests (with the file name), V(2) for
	// watch trouble, V(4) per snapshot. The zero value discards.
	Logger logr.Logger
	// OnError is called for every rejected manifest or read failure with an
	// *Error whose Origin is the file path. Optional.
	OnError func(error)
}

func (o FileOptions) withDefaults() FileOptions {
	if o.ResyncInterval == 0 {
		o.ResyncInterval = DefaultFileResync
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}

func (o FileOptions) validate() error {
	if o.Path == "" {
		return errors.New("source: FileOptions.Path is required")
	}
	if err := validateNodeName(o.NodeName); err != nil {
		return fmt.Errorf("source: FileOptions.NodeName: %w", err)
	}
	if o.ResyncInterval < 0 {
		return fmt.Errorf("source: FileOptions.ResyncInterval %v is negative", o.ResyncInterval)
	}
	return nil
}

func validateNodeName(name string) error {
	if name == "" {
		return errors.New("required")
	}
	if msgs := validation.IsDNS1123Subdomain(strings.ToLower(name)); len(msgs) > 0 {
		return fmt.Errorf("%q: %s", name, strings.Join(msgs, ", "))
	}
	return nil
}

// File is the static pod source that reads a folder of manifests. Adding a
// file gives an ADD, deleting it a REMOVE. Editing a manifest without
// metadata.uid changes its derived UID, so the old pod is removed and the new
// one added (as in the kubelet); a manifest with metadata.uid gives an
// UPDATE. A file that cannot be used is reported and skipped; if it was
// valid before, its last good pod stays.
type File struct {
	opts FileOptions
	sink Sink
	rep  *reporter

	// Owned by the Run goroutine.
	pods map[string]*v1.Pod // file path → last good pod
}

// NewFile returns a file source writing to sink (usually
// Config.Sink(podmanager.FileSource)). It starts nothing.
func NewFile(sink Sink, opts FileOptions) (*File, error) {
	if sink == nil {
		return nil, errors.New("source: NewFile: sink is required")
	}
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &File{
		opts: opts,
		sink: sink,
		rep:  newReporter(podmanager.FileSource, "file", opts.Logger, opts.OnError),
		pods: make(map[string]*v1.Pod),
	}, nil
}

// Errors returns how many manifests or reads have been rejected so far.
func (f *File) Errors() uint64 { return f.rep.errors() }

// Run reads the folder, sends a first snapshot (empty if the folder does not
// exist yet), then watches it and re-reads it every ResyncInterval until ctx
// is done. It returns ctx's error, or the sink's error.
func (f *File) Run(ctx context.Context) error {
	log := f.opts.Logger
	var watcher *fsnotify.Watcher
	var watchTarget string // the folder watched
	stopWatch := func() {
		if watcher != nil {
			_ = watcher.Close()
		}
		watcher, watchTarget = nil, ""
	}
	defer stopWatch()
	// startWatch sets up a new watch. Every full re-read starts with a new
	// one: a folder removed and recreated (possibly with the same inode)
	// leaves the old watch blind, and the re-read that follows covers
	// whatever the old watch had queued.
	startWatch := func() {
		stopWatch()
		// A single manifest is watched through its folder, so that editors
		// that replace the file do not end the watch.
		target := f.opts.Path
		if st, err := os.Stat(target); err == nil && !st.IsDir() {
			target = filepath.Dir(target)
		}
		if _, err := os.Stat(target); err != nil {
			return // nothing to watch yet; the re-read reports the state
		}
		w, err := fsnotify.NewWatcher()
		if err != nil {
			log.V(2).Info("file source cannot watch, relying on re-reads", "path", f.opts.Path, "err", err.Error())
			return
		}
		if err := w.Add(target); err != nil {
			_ = w.Close()
			log.V(2).Info("file source cannot watch, relying on re-reads", "path", f.opts.Path, "err", err.Error())
			return
		}
		watcher, watchTarget = w, target
	}

	// Watch first, so that no change between the read and the watch is lost.
	startWatch()
	if err := f.resync(ctx); err != nil {
		return err
	}
	ticker := f.opts.Clock.NewTicker(f.opts.ResyncInterval)
	defer ticker.Stop()
	for {
		var events <-chan fsnotify.Event
		var errs <-chan error
		if watcher != nil {
			events, errs = watcher.Events, watcher.Errors
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C():
			startWatch()
			if err := f.resync(ctx); err != nil {
				return err
			}
		case err, ok := <-errs:
			if !ok {
				stopWatch()
				continue
			}
			// Events may have been dropped (queue overflow): re-read all.
			log.V(2).Info("file source watch error, re-reading", "path", f.opts.Path, "err", err.Error())
			if err := f.resync(ctx); err != nil {
				return err
			}
		case ev, ok := <-events:
			if !ok {
				stopWatch()
				continue
			}
			if filepath.Clean(ev.Name) == filepath.Clean(watchTarget) && (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)) {
				// The watched folder itself went away: drop the watch and let
				// the next tick set it up again.
				stopWatch()
			}
			changed := f.handleEvent(ev)
			// Coalesce a burst: apply every event already queued, then send
			// one snapshot.
		drain:
			for {
				select {
				case ev, ok := <-events:
					if !ok {
						break drain
					}
					changed = f.handleEvent(ev) || changed
				default:
					break drain
				}
			}
			if changed {
				if err := f.send(ctx); err != nil {
					return err
				}
			}
		}
	}
}

// handleEvent re-reads the one file an event names and reports whether the
// set of pods may have changed.
func (f *File) handleEvent(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	// Path is a folder (its entries) or a single file (watched through its
	// parent folder): anything else in that folder is not ours. Deciding
	// without a stat keeps working while the folder is being removed.
	root := filepath.Clean(f.opts.Path)
	if filepath.Dir(ev.Name) != root && filepath.Clean(ev.Name) != root {
		return false
	}
	if isHidden(ev.Name) {
		return false
	}
	f.readFile(ev.Name)
	return true
}

// resync re-reads the whole folder and sends a snapshot.
func (f *File) resync(ctx context.Context) error {
	st, err := os.Stat(f.opts.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Nothing to run yet, but the source has been read: say so.
		f.opts.Logger.V(2).Info("file source path does not exist", "path", f.opts.Path)
		clear(f.pods)
	case err != nil:
		f.rep.report(f.opts.Path, fmt.Errorf("%w: %v", ErrFetch, err))
		return nil // keep the last good pods; try again on the next tick
	case !st.IsDir():
		f.readFile(f.opts.Path)
	default:
		entries, err := os.ReadDir(f.opts.Path)
		if err != nil {
			f.rep.report(f.opts.Path, fmt.Errorf("%w: %v", ErrFetch, err))
			return nil
		}
		f.rep.resolved(f.opts.Path)
		present := make(map[string]bool, len(entries))
		for _, e := range entries {
			if e.IsDir() || isHidden(e.Name()) {
				continue
			}
			path := filepath.Join(f.opts.Path, e.Name())
			present[path] = true
			f.readFile(path)
		}
		for path := range f.pods {
			if !present[path] {
				delete(f.pods, path)
			}
		}
		// A rejected file that is gone is reported again if it comes back.
		f.rep.retain(func(origin string) bool { return origin == f.opts.Path || present[origin] })
	}
	return f.send(ctx)
}

// readFile updates the pod of one path: a missing file or a directory
// forgets it, a valid manifest replaces it, an invalid one is reported and
// leaves the last good pod in place.
func (f *File) readFile(path string) {
	pod, err := f.decodeFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, errIsDir):
		delete(f.pods, path)
		f.rep.resolved(path)
	case err != nil:
		f.rep.report(path, err)
	default:
		f.pods[path] = pod
		f.rep.resolved(path)
	}
}

var errIsDir = errors.New("is a directory")

func (f *File) decodeFile(path string) (*v1.Pod, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFetch, err)
	}
	if st.IsDir() {
		return nil, errIsDir
	}
	data, err := io.ReadAll(io.LimitReader(file, MaxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFetch, err)
	}
	return staticPodFromManifest(data, podmanager.FileSource, path, f.opts.NodeName)
}

// send delivers a snapshot of the current pods, in file-name order (so that
// of two files with the same pod name, the first one wins). Unchanged files
// hand the Config the same object as last time, which it skips cheaply; the
// source never modifies a pod after it was read.
func (f *File) send(ctx context.Context) error {
	paths := make([]string, 0, len(f.pods))
	for path := range f.pods {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	pods := make([]*v1.Pod, 0, len(paths))
	for _, path := range paths {
		pods = append(pods, f.pods[path])
	}
	f.opts.Logger.V(4).Info("file source snapshot", "path", f.opts.Path, "pods", len(pods))
	return f.sink.Set(ctx, pods)
}

func isHidden(path string) bool { return strings.HasPrefix(filepath.Base(path), ".") }
