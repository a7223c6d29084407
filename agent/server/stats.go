package server

import (
	"context"
	"fmt"
	"net/http"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// summary gathers the node's and the pods' figures.
func (s *Server) summary(ctx context.Context) (statsapi.Summary, error, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.RuntimeRequestTimeout)
	defer cancel()
	var sum statsapi.Summary
	node, nodeErr := s.opts.NodeStats.NodeStats(ctx)
	sum.Node = node
	sum.Node.NodeName = s.opts.NodeName
	var podErr error
	if s.opts.Stats == nil {
		podErr = errorf(http.StatusNotImplemented, "this node's runtime gives no pod stats")
	} else {
		sum.Pods, podErr = s.opts.Stats.ListPodStats(ctx)
		if podErr != nil {
			podErr = fmt.Errorf("pod stats: %w", podErr)
		}
	}
	if sum.Pods == nil {
		sum.Pods = []statsapi.PodStats{}
	}
	return sum, nodeErr, podErr
}

// serveSummary answers /stats/summary (?only_cpu_and_memory=true is
// accepted: the figures are CPU and memory only anyway).
func (s *Server) serveSummary(w http.ResponseWriter, r *http.Request) {
	sum, nodeErr, podErr := s.summary(r.Context())
	if podErr != nil {
		writeError(w, podErr)
		return
	}
	if nodeErr != nil {
		s.log.Error(nodeErr, "node stats")
	}
	writeJSON(w, sum)
}
