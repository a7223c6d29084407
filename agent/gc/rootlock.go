package gc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Several agents may share a pod folder root (two agents on one machine
// with the default roots, or many in one process): a folder one of them
// does not know may be a live pod of another. So an agent sweeps a root
// only when it is the only Manager using it. Every Manager holds a shared
// lock on ROOT/.podlife-gc-users.lock from its first pass until Run ends
// (or Close); to sweep, it takes ROOT/.podlife-gc-sweep.lock (one sweeper
// at a time), and then trades its shared lock for an exclusive one, which
// it gets only if no other Manager holds a shared one. While it holds the
// sweep lock no other Manager can sweep, so the moment in between, when
// it holds neither, is safe. (flock(2) locks belong to open files, so two
// Managers in one process exclude each other too.) An agent that runs no
// Manager (container GC off) holds no lock and is not protected.
const (
	usersLockName = ".podlife-gc-users.lock"
	sweepLockName = ".podlife-gc-sweep.lock"
)

// rootLock is a Manager's shared lock on a root's users lock file.
type rootLock struct {
	root  string
	users *os.File // nil until taken
}

// hold takes the shared lock if it is not held yet.
func (l *rootLock) hold() error {
	if l.users != nil {
		return nil
	}
	if err := os.MkdirAll(l.root, 0o755); err != nil {
		return fmt.Errorf("pod folder root: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(l.root, usersLockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("pod folder root lock: %w", err)
	}
	if err := flock(f, lockShared); err != nil {
		_ = f.Close()
		return fmt.Errorf("pod folder root lock (a sweep of another agent under way?): %w", err)
	}
	l.users = f
	return nil
}

// exclusive reports whether this Manager is alone on the root; if so,
// release ends the exclusivity (back to the shared lock). The shared lock
// must be held.
func (l *rootLock) exclusive() (ok bool, release func(), err error) {
	s, err := os.OpenFile(filepath.Join(l.root, sweepLockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return false, nil, fmt.Errorf("pod folder sweep lock: %w", err)
	}
	if err := flock(s, lockExclusive); err != nil {
		_ = s.Close()
		return false, nil, nil // another Manager sweeps
	}
	done := func() { _ = flock(s, lockNone); _ = s.Close() }
	if err := flock(l.users, lockNone); err != nil {
		done()
		return false, nil, err
	}
	if flock(l.users, lockExclusive) == nil {
		return true, func() {
			// No sweeper can come between: the sweep lock is still ours.
			if err := flock(l.users, lockShared); err != nil {
				l.drop()
			}
			done()
		}, nil
	}
	// Others use the root: back to the shared lock (only a sweeper could
	// hold it exclusively, and none can while the sweep lock is ours).
	if err := flock(l.users, lockShared); err != nil {
		l.drop()
		done()
		return false, nil, err
	}
	done()
	return false, nil, nil
}

// drop releases the lock.
func (l *rootLock) drop() {
	if l.users != nil {
		_ = l.users.Close()
		l.users = nil
	}
}

var errNoLocks = errors.New("no file locks on this system")
