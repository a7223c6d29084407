package imagegc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/runtime"
)

// Runtime is what image garbage collection needs of a container runtime;
// *cri.Runtime implements it.
type Runtime interface {
	// ListImages lists the images present (CRI ListImages).
	ListImages(ctx context.Context) ([]runtime.Image, error)
	// RemoveImage removes an image by ID (CRI RemoveImage).
	RemoveImage(ctx context.Context, image string) error
	// GetPods lists the runtime's pods; with all true, exited containers
	// too: an image any of them was created from is in use.
	GetPods(ctx context.Context, all bool) ([]*runtime.Pod, error)
}

// FsInfoRuntime is a Runtime that tells the usage of its image file
// system (CRI ImageFsInfo); *cri.Runtime is one. The Manager's default
// Stats need it.
type FsInfoRuntime interface {
	ImageFsInfo(ctx context.Context) (runtime.ImageFsUsage, error)
}

// EventRecorder records the node's events (ImageGCFailed,
// FreeDiskSpaceFailed, InvalidDiskCapacity): client-go's
// record.EventRecorder and agent/events.Recorder have this method.
type EventRecorder interface {
	Eventf(object k8sruntime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// The kubelet's defaults (imageGCHighThresholdPercent,
// imageGCLowThresholdPercent, imageMinimumGCAge, imageMaximumGCAge,
// ImageGCPeriod, its image list refresh) and its node status limits
// (nodeStatusMaxImages, MaxNamesPerImageInNodeStatus).
const (
	DefaultHighThresholdPercent = 85
	DefaultLowThresholdPercent  = 80
	DefaultMinAge               = 2 * time.Minute
	DefaultGCPeriod             = 5 * time.Minute
	DefaultDetectPeriod         = 5 * time.Minute
	DefaultImageListPeriod      = 30 * time.Second
	// MaxImagesInNodeStatus is how many images (the largest) the Node's
	// status lists.
	MaxImagesInNodeStatus = 50
	// MaxNamesPerImageInNodeStatus is how many names of an image the
	// Node's status lists (its digests first, then its tags).
	MaxNamesPerImageInNodeStatus = 5
	// DefaultMetricsNamespace prefixes the metric names (the kubelet's).
	DefaultMetricsNamespace = "kubelet"
)

// Options configure a Manager. Every field but Runtime is optional; the
// zero value of each means its documented default.
type Options struct {
	// Runtime lists and removes images and lists the containers using
	// them. Required. Unless Stats is set, it must also be a
	// FsInfoRuntime.
	Runtime Runtime
	// Stats tells the capacity and availability of the image file system.
	// Default: the runtime's ImageFsInfo (its mount point) and the file
	// system mounted there (statfs), as the kubelet. Set it when the
	// images live elsewhere (a VM, a remote provider) or in tests.
	Stats StatsFunc

	// HighThresholdPercent is the usage of the image file system (in
	// percent) at and above which a garbage collection pass removes
	// images. Default 85; 100 turns the periodic collection off (as the
	// kubelet; DeleteUnusedImages still works). 1 to 100.
	HighThresholdPercent int
	// LowThresholdPercent is the usage a pass frees down to. Default 80;
	// 1 to HighThresholdPercent.
	LowThresholdPercent int
	// MinAge is how long an image is kept after it was first seen, at
	// least, whatever the usage (it may just have been pulled for a
	// container about to start). Default 2m (imageMinimumGCAge); a
	// negative value means none.
	MinAge time.Duration
	// MaxAge removes an unused image once it has not been used for that
	// long, whatever the usage (imageMaximumGCAge). Default 0: never.
	// When set, at least MinAge. Images are removed for age only once the
	// Manager has run MaxAge.
	MaxAge time.Duration
	// PinnedImages name images never removed besides those the runtime
	// pins: the sandbox (pause) image when the runtime does not pin it.
	// References ("registry.k8s.io/pause:3.10", "busybox") or image IDs.
	PinnedImages []string

	// GCPeriod is the period of the garbage collection pass. Default 5m
	// (the kubelet's ImageGCPeriod).
	GCPeriod time.Duration
	// DetectPeriod is the period of the listing of images and of every
	// container and sandbox using them (the records of first sight and
	// last use, and the image list). Default 5m, the kubelet's: listing
	// every container is the costly part (seconds at 100,000 pods), and
	// each collection pass detects first anyway.
	DetectPeriod time.Duration
	// ImageListPeriod is the period of the listing of the images alone
	// (the image list of the Node's status). Default 30s, the kubelet's.
	ImageListPeriod time.Duration

	// Recorder and NodeName: the events about the node (Warning
	// ImageGCFailed, FreeDiskSpaceFailed, InvalidDiskCapacity), on the
	// Node NodeName. Default nil: no events.
	Recorder EventRecorder
	NodeName string
	// Clock paces the passes and dates the image records. Default: the
	// real clock.
	Clock clock.WithTicker
	// Logger. The zero value discards.
	Logger logr.Logger
	// Registerer receives the metrics (see the package doc). Default nil:
	// none. MetricsNamespace prefixes their names; default "kubelet".
	Registerer       prometheus.Registerer
	MetricsNamespace string
}

func (o Options) withDefaults() Options {
	if o.HighThresholdPercent == 0 {
		o.HighThresholdPercent = DefaultHighThresholdPercent
	}
	if o.LowThresholdPercent == 0 {
		o.LowThresholdPercent = min(DefaultLowThresholdPercent, o.HighThresholdPercent)
	}
	if o.MinAge == 0 {
		o.MinAge = DefaultMinAge
	} else if o.MinAge < 0 {
		o.MinAge = 0
	}
	if o.GCPeriod == 0 {
		o.GCPeriod = DefaultGCPeriod
	}
	if o.DetectPeriod == 0 {
		o.DetectPeriod = DefaultDetectPeriod
	}
	if o.ImageListPeriod == 0 {
		o.ImageListPeriod = DefaultImageListPeriod
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
	if o.Runtime == nil {
		errs = append(errs, errors.New("Runtime is required"))
	} else if _, ok := o.Runtime.(FsInfoRuntime); !ok && o.Stats == nil {
		errs = append(errs, errors.New("Stats is required when the Runtime has no ImageFsInfo"))
	}
	if o.HighThresholdPercent < 1 || o.HighThresholdPercent > 100 {
		errs = append(errs, fmt.Errorf("invalid HighThresholdPercent %d, must be in range [1-100]", o.HighThresholdPercent))
	}
	if o.LowThresholdPercent < 1 || o.LowThresholdPercent > 100 {
		errs = append(errs, fmt.Errorf("invalid LowThresholdPercent %d, must be in range [1-100]", o.LowThresholdPercent))
	}
	if o.LowThresholdPercent > o.HighThresholdPercent {
		errs = append(errs, fmt.Errorf("LowThresholdPercent %d can not be higher than HighThresholdPercent %d", o.LowThresholdPercent, o.HighThresholdPercent))
	}
	if o.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("MaxAge must not be negative, got %s", o.MaxAge))
	}
	if o.MaxAge > 0 && o.MaxAge < o.MinAge {
		errs = append(errs, fmt.Errorf("MaxAge %s must be greater than MinAge %s", o.MaxAge, o.MinAge))
	}
	if o.GCPeriod < 0 {
		errs = append(errs, fmt.Errorf("GCPeriod must not be negative, got %s", o.GCPeriod))
	}
	if o.DetectPeriod < 0 {
		errs = append(errs, fmt.Errorf("DetectPeriod must not be negative, got %s", o.DetectPeriod))
	}
	if o.ImageListPeriod < 0 {
		errs = append(errs, fmt.Errorf("ImageListPeriod must not be negative, got %s", o.ImageListPeriod))
	}
	if o.Recorder != nil && o.NodeName == "" {
		errs = append(errs, errors.New("NodeName is required with a Recorder"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("imagegc: invalid options: %w", err)
	}
	return nil
}
