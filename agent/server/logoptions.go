package server

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"k8s.io/cri-client/pkg/logs"
)

// logQuery is the query of /containerLogs: the fields of v1.PodLogOptions
// the kubelet reads.
type logQuery struct {
	previous bool
	opts     logs.LogOptions
}

// parseLogQuery reads and validates the query as the kubelet does: bools
// as strconv reads them, tailLines >= 0, limitBytes >= 1, sinceSeconds >= 1,
// sinceTime RFC 3339, not both since forms. Every problem is an error for
// a 400.
func parseLogQuery(q url.Values, now time.Time) (logQuery, error) {
	var lq logQuery
	boolean := func(name string, dst *bool) error {
		v := q.Get(name)
		if v == "" {
			return nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%s=%q: not a boolean", name, v)
		}
		*dst = b
		return nil
	}
	integer := func(name string, min int64) (*int64, error) {
		v := q.Get(name)
		if v == "" {
			return nil, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: not an integer", name, v)
		}
		if n < min {
			return nil, fmt.Errorf("%s=%d: must be at least %d", name, n, min)
		}
		return &n, nil
	}
	for _, b := range []struct {
		name string
		dst  *bool
	}{{"follow", &lq.opts.Follow}, {"previous", &lq.previous}, {"timestamps", &lq.opts.Timestamp}} {
		if err := boolean(b.name, b.dst); err != nil {
			return lq, err
		}
	}
	var err error
	if lq.opts.TailLines, err = integer("tailLines", 0); err != nil {
		return lq, err
	}
	if lq.opts.LimitBytes, err = integer("limitBytes", 1); err != nil {
		return lq, err
	}
	secs, err := integer("sinceSeconds", 1)
	if err != nil {
		return lq, err
	}
	if v := q.Get("sinceTime"); v != "" {
		if secs != nil {
			return lq, fmt.Errorf("sinceSeconds and sinceTime cannot both be set")
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return lq, fmt.Errorf("sinceTime=%q: not an RFC 3339 time", v)
		}
		lq.opts.Since = t
	}
	if secs != nil {
		lq.opts.Since = now.Add(-time.Duration(*secs) * time.Second)
	}
	return lq, nil
}
