package cri

import (
	"fmt"
	"strings"
	"time"
)

// syncPlan is what one SyncPod does, decided by planSync from the pod's
// spec and runtime status alone; syncPod carries it out. Its String form
// is the one line SyncPod logs at verbosity 4.
type syncPlan struct {
	// Idle, when set, says why nothing at all is done: the sandbox is gone
	// and no container of the pod may run again.
	Idle string

	// CreateSandbox: a new sandbox is run (Attempt), for SandboxReason.
	// When an older sandbox died, its containers that are not exited are
	// stopped first (KillFirst, all with reasonSandboxDead).
	CreateSandbox bool
	SandboxReason string
	Attempt       uint32
	// SandboxID is the sandbox the containers run in when none is
	// created; OldSandboxID the dead one when one is.
	SandboxID    string
	OldSandboxID string
	KillFirst    []containerKill

	// Init are the init containers and sidecars looked at, in their order,
	// up to the one the pod waits for.
	Init []containerStep
	// Initialized: every init container has succeeded and every sidecar
	// started (or regular containers already ran in this sandbox): the
	// regular containers are planned.
	Initialized bool
	// InitFailed: an init container failed under RestartPolicy Never; the
	// pod has failed and nothing more starts.
	InitFailed bool

	// Containers are the regular containers, in spec order, when
	// Initialized.
	Containers []containerStep

	// Ephemeral are the ephemeral containers, in spec order
	// (planEphemeral). As in the kubelet they are started first, before
	// the init containers, so that a pod stuck initializing can be
	// debugged; they hold nothing else up.
	Ephemeral []containerStep

	// Finished: no regular container runs or is to (re)start: every one has
	// finished for good, so the sandbox is stopped, unless the sync met an
	// error.
	Finished bool
}

// stepAction is what is done to one container.
type stepAction int

const (
	// actNone: nothing; the container is done, or not to run again.
	actNone stepAction = iota
	// actKeep: it runs and is left as it is.
	actKeep
	// actWait: the pod waits for it (a running init container, a sidecar
	// whose startup probe has not passed).
	actWait
	// actStart: a new instance is created and started.
	actStart
	// actStartCreated: the instance created but not started is started.
	actStartCreated
	// actBackOff: a restart deferred by the crash-loop back-off.
	actBackOff
)

var actionNames = [...]string{"none", "keep", "wait", "start", "start-created", "back-off"}

func (a stepAction) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("action(%d)", int(a))
}

// Reasons a container is stopped by a sync.
const (
	reasonSandboxDead  = "sandbox dead"
	reasonSpecChanged  = "spec changed"
	reasonUnknownState = "unknown state"
)

// containerKill is one container instance a sync stops, and why.
type containerKill struct {
	ID     string
	Name   string
	Reason string
	// Grace is the grace period; 0 for an instance in an unknown state.
	Grace int64
	// Created: never started (no preStop handler runs in it).
	Created bool
}

// containerStep is the decision for one container of the spec.
type containerStep struct {
	Name      string
	Init      bool // an init container or sidecar
	Ephemeral bool // an ephemeral container
	Action    stepAction
	Why       string
	// Kill, when set, is the instance stopped first: a running one whose
	// spec changed, or one in an unknown state. A failed stop cancels the
	// rest of the step.
	Kill *containerKill
	// Restart: actStart or actBackOff of a container that has a dead
	// instance (the back-off applies; the executor records it).
	Restart bool
	// BackOffKey and BackOff: the wait left (actBackOff); ExitCode is the
	// dead instance's, for the error.
	BackOffKey string
	BackOff    time.Duration
	ExitCode   int
	// RestartCount of the instance to create (actStart).
	RestartCount int
	// CreatedID is the instance to start (actStartCreated).
	CreatedID string
	// Prune are the older dead instances removed once the new one started.
	Prune []string
	// Counts: a regular container that runs or is meant to (kept, started,
	// or waiting for its back-off): the pod has not finished.
	Counts bool
	// Target is the targetContainerName of an ephemeral container to
	// start, TargetID the runtime ID of that container's newest instance
	// ("" when it has none: the start fails), whose PID namespace the new
	// container joins.
	Target   string
	TargetID string
}

func (k containerKill) String() string {
	return fmt.Sprintf("kill %s %s (%s, grace %d)", k.Name, shortID(k.ID), k.Reason, k.Grace)
}

func (s containerStep) String() string {
	var b strings.Builder
	b.WriteString(s.Name + ": ")
	if s.Kill != nil {
		b.WriteString(s.Kill.String() + ", then ")
	}
	b.WriteString(s.Action.String())
	switch s.Action {
	case actStart:
		fmt.Fprintf(&b, " #%d", s.RestartCount)
	case actBackOff:
		fmt.Fprintf(&b, " %s", s.BackOff)
	case actStartCreated:
		b.WriteString(" " + shortID(s.CreatedID))
	}
	if s.Why != "" {
		b.WriteString(" (" + s.Why + ")")
	}
	if s.Target != "" {
		id := "none"
		if s.TargetID != "" {
			id = shortID(s.TargetID)
		}
		fmt.Fprintf(&b, " pid namespace of %s %s", s.Target, id)
	}
	if len(s.Prune) > 0 {
		ids := make([]string, len(s.Prune))
		for i, id := range s.Prune {
			ids[i] = shortID(id)
		}
		b.WriteString(" prune " + strings.Join(ids, ","))
	}
	return b.String()
}

// lines renders the plan, one decision a line (the transcript tests).
func (p *syncPlan) lines() []string {
	if p.Idle != "" {
		return []string{"idle: " + p.Idle}
	}
	var out []string
	if p.CreateSandbox {
		s := fmt.Sprintf("sandbox: create attempt %d (%s)", p.Attempt, p.SandboxReason)
		if p.OldSandboxID != "" {
			s += " after stopping " + shortID(p.OldSandboxID)
		}
		out = append(out, s)
		for _, k := range p.KillFirst {
			out = append(out, "  "+k.String())
		}
	} else {
		out = append(out, "sandbox: keep "+shortID(p.SandboxID))
	}
	for _, s := range p.Ephemeral {
		out = append(out, "ephemeral "+s.String())
	}
	for _, s := range p.Init {
		out = append(out, "init "+s.String())
	}
	switch {
	case p.InitFailed:
		out = append(out, "init failed: nothing more starts")
	case !p.Initialized:
		out = append(out, "not initialized: regular containers wait")
	}
	for _, s := range p.Containers {
		out = append(out, "container "+s.String())
	}
	if p.Finished {
		out = append(out, "finished: stop the sandbox")
	}
	return out
}

// String is the plan in one line.
func (p *syncPlan) String() string {
	return strings.Join(p.lines(), "; ")
}

// MarshalLog implements logr.Marshaler.
func (p *syncPlan) MarshalLog() any {
	return p.String()
}

// shortID shortens a runtime ID for the plan's line.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
