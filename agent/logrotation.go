package agent

import (
	"github.com/podlife/podlife/agent/logrotate"
)

// newLogRotation builds the container log rotation (agent/logrotate) of
// the Options, unless ContainerLogMaxSize is negative or the runtime
// cannot give and reopen its containers' log files.
func (a *Agent) newLogRotation() error {
	o := a.opts
	if o.ContainerLogMaxSize < 0 {
		return nil
	}
	rt, ok := o.Runtime.(logrotate.Runtime)
	if !ok {
		return nil
	}
	m, err := logrotate.New(logrotate.Options{
		Runtime:          rt,
		MaxSize:          o.ContainerLogMaxSize,
		MaxFiles:         o.ContainerLogMaxFiles,
		Interval:         o.ContainerLogMonitorInterval,
		Workers:          o.ContainerLogMaxWorkers,
		Clock:            o.Clock,
		Logger:           o.Logger.WithName("logrotate"),
		Registerer:       o.Registerer,
		MetricsNamespace: o.MetricsNamespace,
	})
	if err != nil {
		return err
	}
	a.logs = m
	return nil
}

// LogRotation returns the agent's container log rotation, or nil when it
// does not rotate (Options.ContainerLogMaxSize negative, or a runtime that
// cannot reopen its containers' logs). Run runs it; its Rotate makes a
// pass at once.
func (a *Agent) LogRotation() *logrotate.Manager { return a.logs }
