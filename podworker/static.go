package podworker

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// staticNames makes static pods with the same full name run one at a time:
// at most one started UID per full name, the others wait in arrival order.
// Only live waiters are in line: a waiter that is asked to terminate before
// it started withdraws. Not safe for concurrent use; Workers guards it.
type staticNames struct {
	started map[string]types.UID
	waiting map[string][]types.UID
}

func newStaticNames() staticNames {
	return staticNames{started: make(map[string]types.UID), waiting: make(map[string][]types.UID)}
}

// add puts uid in line for name.
func (s *staticNames) add(name string, uid types.UID) {
	if s.started[name] == uid || slices.Contains(s.waiting[name], uid) {
		return
	}
	s.waiting[name] = append(s.waiting[name], uid)
}

// tryStart reports whether uid may start now, and if so marks it started.
func (s *staticNames) tryStart(name string, uid types.UID) bool {
	if holder, ok := s.started[name]; ok {
		return holder == uid
	}
	q := s.waiting[name]
	if len(q) > 0 && q[0] != uid {
		return false
	}
	s.remove(name, uid)
	s.started[name] = uid
	return true
}

// withdraw takes uid out of line (and releases the name if it held it). It
// returns the waiter that may start now, if any.
func (s *staticNames) withdraw(name string, uid types.UID) (next types.UID) {
	s.remove(name, uid)
	return s.release(name, uid)
}

// release frees the name if uid holds it, and returns the waiter that may
// start now, if any.
func (s *staticNames) release(name string, uid types.UID) (next types.UID) {
	if s.started[name] == uid {
		delete(s.started, name)
	}
	if _, held := s.started[name]; held {
		return ""
	}
	if q := s.waiting[name]; len(q) > 0 {
		return q[0]
	}
	return ""
}

// holder returns the started UID for name.
func (s *staticNames) holder(name string) (types.UID, bool) {
	uid, ok := s.started[name]
	return uid, ok
}

func (s *staticNames) remove(name string, uid types.UID) {
	q := s.waiting[name]
	if i := slices.Index(q, uid); i >= 0 {
		q = slices.Delete(q, i, i+1)
	}
	if len(q) == 0 {
		delete(s.waiting, name)
	} else {
		s.waiting[name] = q
	}
}
