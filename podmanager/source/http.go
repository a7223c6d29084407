package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/podmanager"
)

// DefaultHTTPInterval is the default polling period of the HTTP source.
const DefaultHTTPInterval = 20 * time.Second

// HTTPOptions configures an HTTP source.
type HTTPOptions struct {
	// URL returns one v1 Pod or a v1 PodList, YAML or JSON; an empty body
	// is an empty snapshot. Required; http or https.
	URL string
	// Header is sent with every request. Optional.
	Header http.Header
	// NodeName is this node's name (see FileOptions.NodeName). Required.
	NodeName string
	// Interval is the polling period. Default 20s.
	Interval time.Duration
	// Client does the requests. Default: a client with a 10s timeout.
	Client *http.Client
	// Clock drives the polling ticker. Default: the real clock.
	Clock clock.WithTicker
	// Logger: errors for rejected pods, V(4) per snapshot. Zero discards.
	Logger logr.Logger
	// OnError is called for every failed fetch or rejected pod with an
	// *Error whose Origin is the URL. Optional.
	OnError func(error)
}

func (o HTTPOptions) withDefaults() HTTPOptions {
	if o.Interval == 0 {
		o.Interval = DefaultHTTPInterval
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}

func (o HTTPOptions) validate() error {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("source: HTTPOptions.URL %q: want an http or https URL", o.URL)
	}
	if err := validateNodeName(o.NodeName); err != nil {
		return fmt.Errorf("source: HTTPOptions.NodeName: %w", err)
	}
	if o.Interval < 0 {
		return fmt.Errorf("source: HTTPOptions.Interval %v is negative", o.Interval)
	}
	return nil
}

// HTTP is the static pod source that polls a URL. A failed fetch or a body
// that does not decode keeps the last good snapshot; a pod of a list that
// fails validation is skipped, and the last good pod of the same full name,
// if any, stays. The source is first ready after its first successful
// fetch.
type HTTP struct {
	opts HTTPOptions
	sink Sink
	rep  *reporter

	// Owned by the Run goroutine.
	lastGood map[string]*v1.Pod // full name → last good pod
}

// NewHTTP returns an HTTP source writing to sink (usually
// Config.Sink(podmanager.HTTPSource)). It starts nothing.
func NewHTTP(sink Sink, opts HTTPOptions) (*HTTP, error) {
	if sink == nil {
		return nil, errors.New("source: NewHTTP: sink is required")
	}
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &HTTP{
		opts:     opts,
		sink:     sink,
		rep:      newReporter(podmanager.HTTPSource, "url", opts.Logger, opts.OnError),
		lastGood: make(map[string]*v1.Pod),
	}, nil
}

// Errors returns how many fetches or pods have been rejected so far.
func (h *HTTP) Errors() uint64 { return h.rep.errors() }

// Run fetches the URL now and then every Interval until ctx is done. It
// returns ctx's error, or the sink's error.
func (h *HTTP) Run(ctx context.Context) error {
	ticker := h.opts.Clock.NewTicker(h.opts.Interval)
	defer ticker.Stop()
	for {
		if err := h.poll(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C():
		}
	}
}

// poll fetches once and sends a snapshot unless the fetch failed.
func (h *HTTP) poll(ctx context.Context) error {
	data, err := h.fetch(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		h.rep.report(h.opts.URL, err)
		return nil
	}
	var pods []*v1.Pod
	if len(data) > 0 {
		pods, err = DecodePods(data)
		if err != nil {
			h.rep.report(h.opts.URL, err)
			return nil
		}
	}
	// The document decoded: forget its errors, and those of items that are
	// now accepted or gone.
	h.rep.resolved(h.opts.URL)
	bad := map[string]bool{}
	defer h.rep.retain(func(origin string) bool { return bad[origin] })
	next := make(map[string]*v1.Pod, len(pods))
	var snapshot []*v1.Pod
	for i, pod := range pods {
		origin := fmt.Sprintf("%s#%d", h.opts.URL, i)
		if err := ApplyStaticPodDefaults(pod, podmanager.HTTPSource, h.opts.URL, h.opts.NodeName); err != nil {
			bad[origin] = true
			h.rep.report(origin, err)
			continue
		}
		fullName := podmanager.FullName(pod)
		if err := ValidatePod(pod); err != nil {
			bad[origin] = true
			h.rep.report(origin, err)
			if last, ok := h.lastGood[fullName]; ok {
				if _, taken := next[fullName]; !taken {
					next[fullName] = last
					snapshot = append(snapshot, last.DeepCopy())
				}
			}
			continue
		}
		if _, taken := next[fullName]; !taken {
			next[fullName] = pod
		}
		// Duplicates are passed on: the Config rejects them with a clear
		// error.
		snapshot = append(snapshot, pod.DeepCopy())
	}
	h.lastGood = next
	h.opts.Logger.V(4).Info("http source snapshot", "url", h.opts.URL, "pods", len(snapshot))
	return h.sink.Set(ctx, snapshot)
}

func (h *HTTP) fetch(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.opts.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFetch, err)
	}
	for k, vs := range h.opts.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := h.opts.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFetch, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read body: %v", ErrFetch, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: %s", ErrFetch, resp.Status)
	}
	return data, nil
}
