package volume

import "sync"

// dirLocks serializes the writers of each volume folder: SetUp (a
// container starting) and the resync (an object changed) may write the
// same volume at once, and WriteAtomic and the tmpfs mount are not safe
// for concurrent use on one folder.
type dirLocks struct {
	mu    sync.Mutex
	byDir map[string]*dirLock
}

type dirLock struct {
	mu   sync.Mutex
	refs int // holders and waiters; the entry goes with the last
}

// lock locks dir and returns its unlock.
func (d *dirLocks) lock(dir string) (unlock func()) {
	d.mu.Lock()
	if d.byDir == nil {
		d.byDir = map[string]*dirLock{}
	}
	l := d.byDir[dir]
	if l == nil {
		l = &dirLock{}
		d.byDir[dir] = l
	}
	l.refs++
	d.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		d.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(d.byDir, dir)
		}
		d.mu.Unlock()
	}
}
