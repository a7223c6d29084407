package status_test

import (
	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/agent/status"
	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/podworker"
)

// The agent passes its pod workers, its pod manager, and takes the Manager
// as its StatusReporter.
var (
	_ agent.StatusReporter = (*status.Manager)(nil)
	_ status.PodStates     = (*podworker.Workers)(nil)
	_ status.Pods          = (*podmanager.Manager)(nil)
)
