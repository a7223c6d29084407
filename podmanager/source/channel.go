package source

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/podmanager"
)

// DefaultChannelSource is the default source name of a Channel.
const DefaultChannelSource = "channel"

// ChannelOptions configures a Channel source.
type ChannelOptions struct {
	// Source is the name stamped in kubernetes.io/config.source; it must
	// match the name the sink was registered under. Default "channel".
	// Pods from any source other than podmanager.APISource are static pods
	// (they get mirror pods and one-at-a-time full names); use APISource to
	// have them treated like API pods.
	Source string
	// NodeName, when set, makes the Channel apply ApplyStaticPodDefaults to
	// every pod (derived UID, name suffix, config.hash) before validation.
	// When empty, pods are used as given and must carry a UID.
	NodeName string
	// Logger: errors for rejected pods. The zero value discards.
	Logger logr.Logger
	// OnError is called for every rejected pod with an *Error whose Origin
	// is the pod's full name. Optional.
	OnError func(error)
}

// Channel is a source the embedding program pushes full snapshots into.
// Each snapshot replaces the previous one. Pods are copied, an empty
// namespace becomes "default", and pods that fail ValidatePod are reported
// and skipped.
type Channel struct {
	opts ChannelOptions
	sink Sink
	rep  *reporter
	in   chan pushRequest
}

type pushRequest struct {
	pods []*v1.Pod
	done chan error
}

// NewChannel returns a Channel source writing to sink (usually
// Config.Sink(opts.Source)). It starts nothing.
func NewChannel(sink Sink, opts ChannelOptions) (*Channel, error) {
	if sink == nil {
		return nil, errors.New("source: NewChannel: sink is required")
	}
	if opts.Source == "" {
		opts.Source = DefaultChannelSource
	}
	if opts.NodeName != "" {
		if err := validateNodeName(opts.NodeName); err != nil {
			return nil, fmt.Errorf("source: ChannelOptions.NodeName: %w", err)
		}
	}
	return &Channel{
		opts: opts,
		sink: sink,
		rep:  newReporter(opts.Source, "pod", opts.Logger, opts.OnError),
		in:   make(chan pushRequest),
	}, nil
}

// Errors returns how many pods have been rejected so far.
func (c *Channel) Errors() uint64 { return c.rep.errors() }

// Push hands a full snapshot to Run and waits until it has been merged and
// its updates delivered, or ctx is done. The pods are copied; the caller
// keeps them. Push blocks until Run is running.
func (c *Channel) Push(ctx context.Context, pods []*v1.Pod) error {
	req := pushRequest{pods: pods, done: make(chan error, 1)}
	select {
	case c.in <- req:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run applies pushed snapshots until ctx is done, then returns ctx's error.
func (c *Channel) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case req := <-c.in:
			err := c.sink.Set(ctx, c.prepare(req.pods))
			req.done <- err
			if err != nil {
				return err
			}
		}
	}
}

func (c *Channel) prepare(in []*v1.Pod) []*v1.Pod {
	out := make([]*v1.Pod, 0, len(in))
	for _, p := range in {
		if p == nil {
			continue
		}
		pod := p.DeepCopy()
		if c.opts.NodeName != "" {
			if err := ApplyStaticPodDefaults(pod, c.opts.Source, "channel", c.opts.NodeName); err != nil {
				c.rep.report(podmanager.FullName(p), err)
				continue
			}
		}
		if pod.Namespace == "" {
			pod.Namespace = metav1.NamespaceDefault
		}
		if err := ValidatePod(pod); err != nil {
			c.rep.report(podmanager.FullName(pod), err)
			continue
		}
		out = append(out, pod)
	}
	return out
}
