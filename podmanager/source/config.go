package source

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Sink receives full snapshots from one source. Set blocks until the
// resulting updates are delivered or ctx is done.
type Sink interface {
	// Set replaces the source's pods with pods. It takes ownership of the
	// pods: the caller must not modify them afterwards (the Config stamps
	// annotations on pods it has not seen before, then hands them to the
	// consumer). A source may pass the same object again in a later
	// snapshot to mean "unchanged"; that is the cheap path. If ctx is done
	// before every update is delivered, Set returns ctx's error and the
	// undelivered updates of that snapshot are lost.
	Set(ctx context.Context, pods []*v1.Pod) error
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(ctx context.Context, pods []*v1.Pod) error

var _ Sink = SinkFunc(nil)

// Set calls f.
func (f SinkFunc) Set(ctx context.Context, pods []*v1.Pod) error { return f(ctx, pods) }

// DefaultBufferSize is the default capacity of the Updates channel.
const DefaultBufferSize = 50

// ConfigOptions configures a Config.
type ConfigOptions struct {
	// Clock stamps kubernetes.io/config.seen. Default: the real clock.
	Clock clock.PassiveClock
	// Logger: V(4) per merged snapshot. The zero value discards.
	Logger logr.Logger
	// OnError is called, outside any lock, for every pod the merge rejects
	// (an *Error wrapping ErrDuplicateFullName or ErrInvalidPod). Optional.
	OnError func(error)
	// BufferSize is the capacity of the Updates channel. Default 50.
	BufferSize int
}

func (o ConfigOptions) withDefaults() ConfigOptions {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.BufferSize == 0 {
		o.BufferSize = DefaultBufferSize
	}
	return o
}

func (o ConfigOptions) validate() error {
	if o.BufferSize < 0 {
		return fmt.Errorf("source: ConfigOptions.BufferSize %d is negative", o.BufferSize)
	}
	return nil
}

// Config merges the full snapshots of several sources into incremental
// PodUpdates (the kubelet's PodConfig). Each source writes through its own
// Sink; the merged stream is read from Updates. Config starts no goroutine:
// Sink.Set does the merge and the delivery on the caller's goroutine, so a
// source blocks while the consumer is not reading.
type Config struct {
	opts    ConfigOptions
	updates chan PodUpdate
	ready   chan struct{}

	// mu serializes merges and deliveries, so that the updates of one
	// snapshot are delivered together and in order; it guards the fields
	// below.
	mu        sync.Mutex
	sources   map[string]*snapshot
	reporters map[string]*reporter // by source: rejections once per change
	readyDone bool
}

// NewConfig returns a Config with no source.
func NewConfig(opts ConfigOptions) (*Config, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &Config{
		opts:      opts,
		updates:   make(chan PodUpdate, opts.BufferSize),
		ready:     make(chan struct{}),
		sources:   make(map[string]*snapshot),
		reporters: make(map[string]*reporter),
	}, nil
}

// Updates returns the merged, incremental stream. It is never closed.
func (c *Config) Updates() <-chan PodUpdate { return c.updates }

// Sink registers the source name (if new) and returns the Sink its snapshots
// go to. Register every source before running any of them: readiness waits
// for the sources registered so far. name must not be empty. Sink waits
// while another source's Set is blocked on a full Updates channel.
func (c *Config) Sink(name string) Sink {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.sources[name]; !ok {
		c.sources[name] = &snapshot{pods: map[types.UID]*v1.Pod{}}
		c.reporters[name] = newReporter(name, "pod", c.opts.Logger, c.opts.OnError)
	}
	return SinkFunc(func(ctx context.Context, pods []*v1.Pod) error { return c.set(ctx, name, pods) })
}

// Ready is closed once every registered source has delivered its first
// snapshot and the updates of those snapshots are in the Updates channel.
func (c *Config) Ready() <-chan struct{} { return c.ready }

// SeenAllSources reports whether Ready is closed.
func (c *Config) SeenAllSources() bool {
	select {
	case <-c.ready:
		return true
	default:
		return false
	}
}

// Errors returns how many pods the merge has rejected.
func (c *Config) Errors() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n uint64
	for _, r := range c.reporters {
		n += r.errors()
	}
	return n
}

// set merges one snapshot and delivers its updates.
func (c *Config) set(ctx context.Context, source string, pods []*v1.Pod) error {
	type rejection struct {
		origin string
		err    error
	}
	var rejected []rejection
	reject := func(origin string, err error) { rejected = append(rejected, rejection{origin, err}) }
	err := c.mergeAndDeliver(ctx, source, pods, reject)
	c.mu.Lock()
	rep := c.reporters[source]
	c.mu.Unlock()
	if rep == nil {
		return err // unregistered source: mergeAndDeliver said so
	}
	// Report outside the lock, each rejection once per change: a
	// duplicate that every re-read of its source repeats is reported once.
	bad := make(map[string]bool, len(rejected))
	for _, r := range rejected {
		bad[r.origin] = true
		rep.report(r.origin, r.err)
	}
	rep.retain(func(origin string) bool { return bad[origin] })
	return err
}

func (c *Config) mergeAndDeliver(ctx context.Context, source string, pods []*v1.Pod, reject func(string, error)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sources[source]
	if !ok {
		return fmt.Errorf("source: snapshot from unregistered source %q", source)
	}
	ch := s.merge(source, pods, c.opts.Clock.Now(), reject)
	updates := ch.podUpdates(source)
	c.opts.Logger.V(4).Info("source snapshot merged", "source", source, "pods", len(pods),
		"removed", len(ch.removes), "added", len(ch.adds), "updated", len(ch.updates),
		"deleted", len(ch.deletes), "reconciled", len(ch.reconciles))
	for _, u := range updates {
		select {
		case c.updates <- u:
		case <-ctx.Done():
			return fmt.Errorf("deliver %s update from source %q: %w", u.Op, source, ctx.Err())
		}
	}
	c.markReadyLocked()
	return nil
}

func (c *Config) markReadyLocked() {
	if c.readyDone {
		return
	}
	for _, s := range c.sources {
		if !s.seen {
			return
		}
	}
	c.readyDone = true
	close(c.ready)
}
