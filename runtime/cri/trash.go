package cri

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"k8s.io/utils/clock"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/runtime"
)

// trashName is the folder under VolumeRoot into which RemovePod moves a
// pod's folder; a goroutine of the Runtime deletes what lands there. No
// pod UID names it (podDir refuses it).
const trashName = ".podlife-removed"

// janitor deletes the pod folders RemovePod moved to the trash, one after
// the other, off the pod worker's path: a pod finishes after one rename
// instead of a walk of its folder, and the next pod of the same UID gets a
// new folder at once. Its goroutine starts with the first folder and stops
// at Close; what is left then is deleted by the next Runtime on the same
// VolumeRoot, which takes over the trash when it first moves a folder.
type janitor struct {
	log   logr.Logger
	clock clock.PassiveClock
	trash string

	mu      sync.Mutex
	queue   []string
	started bool
	closed  bool
	seq     uint64
	wake    chan struct{} // room for one signal
	stop    chan struct{}
	done    chan struct{}
}

func newJanitor(volumeRoot string, log logr.Logger, clk clock.PassiveClock) *janitor {
	return &janitor{log: log, clock: clk, trash: filepath.Join(volumeRoot, trashName),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// removePodDir moves VolumeRoot/UID (the pod's emptyDir volumes,
// termination-message files and logs) to the trash for the janitor, or,
// when it cannot be moved, deletes it at once. A pod that has none is done.
func (r *Runtime) removePodDir(uid types.UID) error {
	dir, err := r.podDir(uid)
	if err != nil {
		return nil // nothing can have been made for it
	}
	if err := r.janitor.take(dir, string(uid)); err == nil {
		return nil
	} else if _, statErr := os.Lstat(dir); errors.Is(statErr, fs.ErrNotExist) {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove the pod's folder: %w", err)
	}
	return nil
}

// removePodLogs removes the pod's folder of logs under PodLogsDir,
// NAMESPACE_NAME_UID, when there is one: named from rp when it has a name,
// else found by its UID suffix.
func (r *Runtime) removePodLogs(uid types.UID, rp *runtime.Pod) error {
	if r.opts.PodLogsDir == "" {
		return nil
	}
	if _, err := r.podDir(uid); err != nil {
		return nil // nothing can have been made for it
	}
	var dirs []string
	if rp != nil && rp.Name != "" && rp.Namespace != "" {
		dirs = []string{filepath.Join(r.opts.PodLogsDir, rp.Namespace+"_"+rp.Name+"_"+string(uid))}
	} else if entries, err := os.ReadDir(r.opts.PodLogsDir); err == nil {
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), "_"+string(uid)) {
				dirs = append(dirs, filepath.Join(r.opts.PodLogsDir, e.Name()))
			}
		}
	}
	var errs []error
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, fmt.Errorf("remove the pod's logs: %w", err))
		}
	}
	return errors.Join(errs...)
}

// take moves dir into the trash and queues it. It fails when the janitor
// is closed or the move fails (dir missing included).
func (j *janitor) take(dir, name string) error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return errors.New("runtime closed")
	}
	j.seq++
	to := filepath.Join(j.trash, name+"."+strconv.FormatInt(j.clock.Now().UnixNano(), 36)+"."+strconv.FormatUint(j.seq, 36))
	j.mu.Unlock()
	err := os.Rename(dir, to)
	if errors.Is(err, fs.ErrNotExist) {
		// No trash yet (or no pod folder: then Mkdir fails too, or the
		// second rename does).
		if merr := os.Mkdir(j.trash, 0o700); merr != nil && !errors.Is(merr, fs.ErrExist) {
			return merr
		}
		err = os.Rename(dir, to)
	}
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		// Closed meanwhile: the next Runtime on VolumeRoot deletes it.
		return nil
	}
	j.queue = append(j.queue, to)
	if !j.started {
		j.started = true
		go j.run()
	}
	select {
	case j.wake <- struct{}{}:
	default:
	}
	return nil
}

// run deletes queued folders until close; it first queues what an earlier
// Runtime left in the trash.
func (j *janitor) run() {
	defer close(j.done)
	if entries, err := os.ReadDir(j.trash); err == nil {
		j.mu.Lock()
		queued := make(map[string]bool, len(j.queue))
		for _, q := range j.queue {
			queued[q] = true
		}
		for _, e := range entries {
			if p := filepath.Join(j.trash, e.Name()); !queued[p] {
				j.queue = append(j.queue, p)
			}
		}
		j.mu.Unlock()
	}
	for {
		j.mu.Lock()
		var next string
		if len(j.queue) > 0 {
			next = j.queue[0]
			j.queue[0] = ""
			j.queue = j.queue[1:]
		}
		j.mu.Unlock()
		if next == "" {
			select {
			case <-j.stop:
				return
			case <-j.wake:
				continue
			}
		}
		if err := os.RemoveAll(next); err != nil {
			j.log.Info("could not delete a removed pod's folder; the next runtime on this VolumeRoot tries again", "path", next, "err", err)
		}
		select {
		case <-j.stop:
			return
		default:
		}
	}
}

// close stops the goroutine, if any, and waits for it; folders still
// queued stay in the trash.
func (j *janitor) close() {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return
	}
	j.closed = true
	started := j.started
	j.mu.Unlock()
	close(j.stop)
	if started {
		<-j.done
	}
}
