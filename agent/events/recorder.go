package events

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/podlife/podlife/internal/validate"
	"github.com/podlife/podlife/metrics"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

// Defaults of Options.
const (
	// DefaultComponent is the source component of every event.
	DefaultComponent = "podlife"
	// DefaultQPS and DefaultBurst are the kubelet's --event-qps and
	// --event-burst.
	DefaultQPS   = 50
	DefaultBurst = 100
	// DefaultMetricsNamespace prefixes the metric names.
	DefaultMetricsNamespace = "podlife"
)

// Drop reasons, the values of the events_dropped_total reason label.
const (
	DropRateLimit  = "rate_limit"
	DropNotRunning = "not_running"
)

// Options configure a Recorder.
type Options struct {
	// Client sends the events (the events.k8s.io-compatible core/v1 Events
	// API). Required. Give it rate limits of its own.
	Client kubernetes.Interface
	// NodeName is the source host of every event. Required.
	NodeName string
	// Component is the source component. Default "podlife".
	Component string
	// QPS and Burst bound the events sent: over them an event is dropped
	// and counted. Defaults 50 and 100 (the kubelet's).
	QPS   float32
	Burst int
	// Clock paces the token bucket. Default: the real clock.
	Clock clock.PassiveClock
	// Logger: V(4) for every event recorded. The zero value discards.
	Logger logr.Logger
	// Registerer receives the metrics. Default nil: none.
	Registerer prometheus.Registerer
	// MetricsNamespace prefixes the metric names. Default "podlife".
	MetricsNamespace string
}

func (o Options) withDefaults() Options {
	if o.Component == "" {
		o.Component = DefaultComponent
	}
	if o.QPS == 0 {
		o.QPS = DefaultQPS
	}
	if o.Burst == 0 {
		o.Burst = DefaultBurst
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.MetricsNamespace == "" {
		o.MetricsNamespace = DefaultMetricsNamespace
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.Client == nil {
		errs = append(errs, errors.New("Client is required"))
	}
	if o.NodeName == "" {
		errs = append(errs, errors.New("NodeName is required"))
	}
	errs = append(errs, validate.NonNegative(validate.Field("QPS", o.QPS))...)
	errs = append(errs, validate.NonNegative(validate.Field("Burst", o.Burst))...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("events: invalid options: %w", err)
	}
	return nil
}

// Recorder records events to the API server while Run runs. It implements
// record.EventRecorder and is safe for concurrent use.
type Recorder struct {
	opts    Options
	log     logr.Logger
	limiter flowcontrol.PassiveRateLimiter
	source  v1.EventSource

	recorded *prometheus.CounterVec
	dropped  *prometheus.CounterVec

	mu      sync.Mutex
	running record.EventRecorder // nil outside Run
	started bool
}

var _ record.EventRecorder = (*Recorder)(nil)

// New validates opts and returns a Recorder. It starts nothing.
func New(opts Options) (*Recorder, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	r := &Recorder{
		opts:    opts,
		log:     opts.Logger,
		limiter: flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(opts.QPS, opts.Burst, opts.Clock),
		source:  v1.EventSource{Component: opts.Component, Host: opts.NodeName},
		recorded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: opts.MetricsNamespace, Name: "events_recorded_total",
			Help: "Events handed to the API server's event sink, by type (Normal, Warning).",
		}, []string{"type"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: opts.MetricsNamespace, Name: "events_dropped_total",
			Help: "Events dropped before reaching the event sink, by reason (rate_limit, not_running).",
		}, []string{"reason"}),
	}
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(metrics.Collectors{r.recorded, r.dropped}); err != nil {
			return nil, fmt.Errorf("events: register metrics: %w", err)
		}
	}
	return r, nil
}

// Run sends events until ctx is done, then flushes what it can and returns
// nil. It may be called once.
func (r *Recorder) Run(ctx context.Context) error {
	r.mu.Lock()
	if r.started {
		r.mu.Unlock()
		return errors.New("events: Run called twice")
	}
	r.started = true
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: r.opts.Client.CoreV1().Events("")})
	r.running = b.NewRecorder(scheme.Scheme, r.source)
	r.mu.Unlock()

	<-ctx.Done()
	r.mu.Lock()
	r.running = nil
	r.mu.Unlock()
	b.Shutdown()
	return nil
}

// recorder returns the running recorder if an event of eventtype may go
// now; otherwise it counts the drop and returns nil.
func (r *Recorder) recorder(eventtype string) record.EventRecorder {
	r.mu.Lock()
	rec := r.running
	r.mu.Unlock()
	switch {
	case rec == nil:
		r.dropped.WithLabelValues(DropNotRunning).Inc()
		return nil
	case !r.limiter.TryAccept():
		r.dropped.WithLabelValues(DropRateLimit).Inc()
		return nil
	}
	r.recorded.WithLabelValues(eventtype).Inc()
	return rec
}

// Event implements record.EventRecorder.
func (r *Recorder) Event(object runtime.Object, eventtype, reason, message string) {
	if rec := r.recorder(eventtype); rec != nil {
		r.log.V(4).Info("event", "type", eventtype, "reason", reason, "message", message)
		rec.Event(object, eventtype, reason, message)
	}
}

// Eventf implements record.EventRecorder.
func (r *Recorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	if rec := r.recorder(eventtype); rec != nil {
		r.log.V(4).Info("event", "type", eventtype, "reason", reason, "message", fmt.Sprintf(messageFmt, args...))
		rec.Eventf(object, eventtype, reason, messageFmt, args...)
	}
}

// AnnotatedEventf implements record.EventRecorder.
func (r *Recorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...interface{}) {
	if rec := r.recorder(eventtype); rec != nil {
		rec.AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
	}
}
