package podworker

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// schedule holds the deadlines of delayed re-deliveries (resyncs and
// retries): a min-heap of (time, UID), one timer for the earliest. An entry
// is stale, and skipped when it comes due, unless the pod's record still
// carries the same deadline, so a new deadline never needs the old one
// removed.
type schedule struct {
	mu    sync.Mutex
	items dueHeap
	wake  chan struct{} // a new earliest deadline; capacity 1
}

type dueItem struct {
	at  int64 // unix nanoseconds of the injected clock
	uid types.UID
}

// dueHeap is a binary min-heap by at. It is hand-written rather than built
// on container/heap so that push and pop do not box items into interfaces.
type dueHeap []dueItem

func (h *dueHeap) push(it dueItem) {
	*h = append(*h, it)
	a := *h
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if a[p].at <= a[i].at {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *dueHeap) pop() dueItem {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a[n] = dueItem{}
	a = a[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && a[l].at < a[m].at {
			m = l
		}
		if r < n && a[r].at < a[m].at {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

func newSchedule() *schedule { return &schedule{wake: make(chan struct{}, 1)} }

// add records a deadline and wakes the timer loop if it is the earliest.
func (s *schedule) add(uid types.UID, at int64) {
	s.mu.Lock()
	earliest := len(s.items) == 0 || at < s.items[0].at
	s.items.push(dueItem{at: at, uid: uid})
	s.mu.Unlock()
	if earliest {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// next returns the earliest deadline.
func (s *schedule) next() (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.items) == 0 {
		return 0, false
	}
	return s.items[0].at, true
}

// popDue appends every entry due at now to buf and returns it.
func (s *schedule) popDue(now int64, buf []dueItem) []dueItem {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.items) > 0 && s.items[0].at <= now {
		buf = append(buf, s.items.pop())
	}
	return buf
}
