package agent

import (
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/agent/imagegc"
)

// newImageGC builds the image garbage collection (agent/imagegc) of the
// Options, unless ImageGCHighThresholdPercent is negative or the runtime
// cannot list and remove its images (or tell its image file system's
// usage, without Options.ImageFsStats).
func (a *Agent) newImageGC() error {
	o := a.opts
	if o.ImageGCHighThresholdPercent < 0 {
		return nil
	}
	rt, ok := o.Runtime.(imagegc.Runtime)
	if !ok {
		return nil
	}
	if _, ok := rt.(imagegc.FsInfoRuntime); !ok && o.ImageFsStats == nil {
		return nil
	}
	var rec imagegc.EventRecorder
	if o.Recorder != nil {
		rec = o.Recorder
	}
	m, err := imagegc.New(imagegc.Options{
		Runtime:              rt,
		Stats:                o.ImageFsStats,
		HighThresholdPercent: o.ImageGCHighThresholdPercent,
		LowThresholdPercent:  o.ImageGCLowThresholdPercent,
		MinAge:               o.ImageMinimumGCAge,
		MaxAge:               o.ImageMaximumGCAge,
		PinnedImages:         o.ImageGCPinnedImages,
		Recorder:             rec,
		NodeName:             o.NodeName,
		Clock:                o.Clock,
		Logger:               o.Logger.WithName("imagegc"),
		Registerer:           o.Registerer,
		MetricsNamespace:     o.MetricsNamespace,
	})
	if err != nil {
		return err
	}
	a.images = m
	return nil
}

// ImageGC returns the agent's image manager, or nil when it has none
// (Options.ImageGCHighThresholdPercent negative, or a runtime that cannot
// list and remove images). Run runs it; its DeleteUnusedImages reclaims
// the image file system for an eviction manager.
func (a *Agent) ImageGC() *imagegc.Manager { return a.images }

// nodeImages is the Node's status.images: the image manager's list.
func (a *Agent) nodeImages() []v1.ContainerImage {
	if a.images == nil {
		return nil
	}
	return a.images.NodeImages()
}
