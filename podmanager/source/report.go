package source

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
)

// reporter logs, counts and forwards rejected input, once per change: an
// origin (a file, a URL, a pod) rejected again for the same reason at the
// next re-read is not reported again until it was accepted (resolved) or
// is rejected for another reason. It is safe for concurrent use.
type reporter struct {
	source  string
	key     string // log key for the origin: "file", "url", "pod"
	log     logr.Logger
	onError func(error)
	count   atomic.Uint64

	mu   sync.Mutex
	last map[string]string // origin → message of its last reported error
}

func newReporter(source, key string, log logr.Logger, onError func(error)) *reporter {
	return &reporter{source: source, key: key, log: log, onError: onError, last: map[string]string{}}
}

// report reports err for origin unless it is the error last reported for
// it.
func (r *reporter) report(origin string, err error) {
	msg := err.Error()
	r.mu.Lock()
	if prev, ok := r.last[origin]; ok && prev == msg {
		r.mu.Unlock()
		return
	}
	r.last[origin] = msg
	r.mu.Unlock()
	e := &Error{Source: r.source, Origin: origin, Err: err}
	r.count.Add(1)
	r.log.Error(err, "pod source input rejected", "source", r.source, r.key, origin, "reason", Reason(err))
	if r.onError != nil {
		r.onError(e)
	}
}

// resolved forgets the last error of origin: it was accepted or is gone.
func (r *reporter) resolved(origin string) {
	r.mu.Lock()
	delete(r.last, origin)
	r.mu.Unlock()
}

// retain forgets the last errors of the origins keep refuses.
func (r *reporter) retain(keep func(origin string) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for origin := range r.last {
		if !keep(origin) {
			delete(r.last, origin)
		}
	}
}

func (r *reporter) errors() uint64 { return r.count.Load() }

// Reason names the class of a rejection for metrics and logs: "decode",
// "not_pod", "invalid", "duplicate", "fetch", or "other".
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrDecode):
		return "decode"
	case errors.Is(err, ErrNotPod):
		return "not_pod"
	case errors.Is(err, ErrInvalidPod):
		return "invalid"
	case errors.Is(err, ErrDuplicateFullName):
		return "duplicate"
	case errors.Is(err, ErrFetch):
		return "fetch"
	}
	return "other"
}
