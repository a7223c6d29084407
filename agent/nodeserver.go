package agent

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/agent/server"
)

// newServer builds the node server of Options.Server around the agent's
// pods and, where the runtime offers them (runtime/cri does), its logs,
// streams, commands and stats, and binds its port, so that the Node can
// publish it.
func (a *Agent) newServer() error {
	so := *a.opts.Server
	if so.NodeName == "" {
		so.NodeName = a.opts.NodeName
	}
	if so.Pods == nil {
		so.Pods = server.PodListerFunc(a.serverPods)
	}
	rt := a.opts.Runtime
	if l, ok := rt.(server.ContainerLogs); ok && so.Logs == nil {
		so.Logs = l
	}
	if s, ok := rt.(server.Streaming); ok && so.Streaming == nil {
		so.Streaming = s
	}
	if c, ok := rt.(server.CommandRunner); ok && so.Commands == nil {
		so.Commands = c
	}
	if s, ok := rt.(server.PodStats); ok && so.Stats == nil {
		so.Stats = s
	}
	if so.Logger.GetSink() == nil {
		so.Logger = a.opts.Logger.WithName("server")
	}
	if so.Healthy == nil {
		so.Healthy = func() error {
			if !a.SourcesReady() {
				return fmt.Errorf("pod sources not read yet")
			}
			return nil
		}
	}
	srv, err := server.New(so)
	if err != nil {
		return err
	}
	if err := srv.Listen(); err != nil {
		return err
	}
	a.server = srv
	return nil
}

// serverPods are the agent's desired pods with their latest status, for
// the node server.
func (a *Agent) serverPods() []*v1.Pod {
	pods := a.pods.GetPods()
	out := make([]*v1.Pod, 0, len(pods))
	for _, p := range pods {
		if st, ok := a.status.Status(p.UID); ok {
			p = p.DeepCopy()
			p.Status = st
		}
		out = append(out, p)
	}
	return out
}

// Server returns the node server of Options.Server, or nil.
func (a *Agent) Server() *server.Server { return a.server }
