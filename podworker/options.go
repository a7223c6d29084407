package podworker

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/runtime"
)

// Defaults of Options.
const (
	DefaultResyncInterval    = time.Minute
	DefaultBackOffPeriod     = 10 * time.Second
	DefaultStatusWaitTimeout = 30 * time.Second
	// JitterFactor is the fraction by which resync and backoff delays are
	// stretched at random: a delay d becomes a value in [d, d*(1+JitterFactor)).
	JitterFactor = 0.5
)

// Options configure Workers. The zero value of every field but Syncer is
// valid and means its documented default.
type Options struct {
	// Syncer does the work. Required.
	Syncer Syncer
	// Logger receives lifecycle logs: V(2) for transitions, V(4) for every
	// update. The zero value discards.
	Logger logr.Logger
	// Clock drives every timer. Default: the real clock.
	Clock clock.WithTicker
	// Cache, when set, makes each sync wait for a status newer than the end
	// of the previous sync of that pod (bounded by StatusWaitTimeout), and
	// lets a pod that is terminal on first sight skip straight to terminated
	// cleanup only when the runtime agrees that nothing of it runs. When nil,
	// the Syncer receives a PodStatus with only ID, Name and Namespace set.
	Cache runtime.Cache
	// ResyncInterval is how often a running pod is re-synced after a
	// successful SyncPod (jittered). Default 1m. Zero means the default;
	// negative is an error.
	ResyncInterval time.Duration
	// BackOffPeriod is the delay before retrying after a Syncer error
	// (jittered, at most ResyncInterval). Default 10s.
	BackOffPeriod time.Duration
	// MaxBackOffPeriod, when larger than BackOffPeriod, makes the retry delay
	// double with each consecutive failure of a pod, up to this value (and
	// never beyond ResyncInterval). Default: equal to BackOffPeriod (a fixed
	// delay, as the kubelet has).
	MaxBackOffPeriod time.Duration
	// StatusWaitTimeout bounds the wait for a fresh status in Cache; a wait
	// that runs out is a sync error (retried with backoff). Default 30s.
	StatusWaitTimeout time.Duration
	// Metrics, when set, receives latency observations. Default: none.
	Metrics MetricsRecorder
	// Random returns a number in [0, 1) for jitter. Default: math/rand/v2.
	// Tests pass a constant for exact delays.
	Random func() float64
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.ResyncInterval == 0 {
		o.ResyncInterval = DefaultResyncInterval
	}
	if o.BackOffPeriod == 0 {
		o.BackOffPeriod = DefaultBackOffPeriod
	}
	if o.MaxBackOffPeriod == 0 || o.MaxBackOffPeriod < o.BackOffPeriod {
		o.MaxBackOffPeriod = o.BackOffPeriod
	}
	if o.StatusWaitTimeout == 0 {
		o.StatusWaitTimeout = DefaultStatusWaitTimeout
	}
	if o.Random == nil {
		o.Random = rand.Float64
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.Syncer == nil {
		errs = append(errs, errors.New("Syncer is required"))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"ResyncInterval", o.ResyncInterval},
		{"BackOffPeriod", o.BackOffPeriod},
		{"MaxBackOffPeriod", o.MaxBackOffPeriod},
		{"StatusWaitTimeout", o.StatusWaitTimeout},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, got %s", d.name, d.v))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("podworker: invalid options: %w", err)
	}
	return nil
}

// jitter returns a duration in [d, d*(1+JitterFactor)).
func jitter(d time.Duration, random func() float64) time.Duration {
	if d <= 0 {
		return 0
	}
	return d + time.Duration(random()*JitterFactor*float64(d))
}
