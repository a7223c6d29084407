package source

import (
	"sync/atomic"

	"github.com/go-logr/logr"
)

// reporter logs, counts and forwards rejected input. It is safe for
// concurrent use.
type reporter struct {
	source  string
	key     string // log key for the origin: "file", "url", "pod"
	log     logr.Logger
	onError func(error)
	count   atomic.Uint64
}

func newReporter(source, key string, log logr.Logger, onError func(error)) *reporter {
	return &reporter{source: source, key: key, log: log, onError: onError}
}

func (r *reporter) report(origin string, err error) {
	e := &Error{Source: r.source, Origin: origin, Err: err}
	r.count.Add(1)
	r.log.Error(err, "pod source input rejected", "source", r.source, r.key, origin)
	if r.onError != nil {
		r.onError(e)
	}
}

func (r *reporter) errors() uint64 { return r.count.Load() }
