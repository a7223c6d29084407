package chaos

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// trace keeps the last events of a soak (a ring) and a count of every kind,
// so that a failure can say what led to it.
type trace struct {
	start time.Time

	mu     sync.Mutex
	ring   []string
	next   int
	total  int
	counts map[string]int
}

func newTrace(size int) *trace {
	return &trace{start: time.Now(), ring: make([]string, size), counts: map[string]int{}}
}

// add records one event of kind.
func (t *trace) add(kind, format string, args ...any) {
	line := fmt.Sprintf("%9.3fs %-16s %s", time.Since(t.start).Seconds(), kind, fmt.Sprintf(format, args...))
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ring[t.next] = line
	t.next = (t.next + 1) % len(t.ring)
	t.total++
	t.counts[kind]++
}

// summary returns the number of events and the counts by kind.
func (t *trace) summary() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%d events:", t.total)
	for _, k := range slices.Sorted(maps.Keys(t.counts)) {
		fmt.Fprintf(&b, " %s=%d", k, t.counts[k])
	}
	return b.String()
}

// last returns the last n events, oldest first.
func (t *trace) last(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	n = min(n, t.total, len(t.ring))
	var b strings.Builder
	for i := range n {
		idx := (t.next - n + i + len(t.ring)) % len(t.ring)
		b.WriteString(t.ring[idx])
		b.WriteByte('\n')
	}
	return b.String()
}
