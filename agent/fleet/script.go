package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ScriptAnnotation is the pod annotation that scripts what the pod's
// containers do on a fleet node. Its value is a Script in JSON:
//
//	metadata:
//	  annotations:
//	    fleet.podlife.io/script: |
//	      {"containers": {"main": {"exitCodes": [1, 1, 0], "runFor": "2s"}}}
//
// A pod without it runs as on a real node whose containers never exit by
// themselves, pull at once, stop at SIGTERM and pass every probe. A value
// that does not parse is reported as an InvalidScript event on the pod,
// and the pod runs as if it had none.
const ScriptAnnotation = "fleet.podlife.io/script"

// ReasonInvalidScript is the reason of the Warning event a pod with a
// ScriptAnnotation that does not parse gets, once, when its node admits it.
const ReasonInvalidScript = "InvalidScript"

// What Script.Runs counts by.
const (
	// RunsPerPod numbers a container's runs within its pod: the first run
	// is 0, each restart one more (the container's restart count).
	RunsPerPod = "pod"
	// RunsPerController numbers a container's runs across every pod of
	// the pod's controller (its ownerReference with controller: true) in
	// the whole fleet, restarts included: a Job whose pods must fail twice
	// and then succeed. A pod without a controller counts per pod.
	RunsPerController = "controller"
)

// Script is the value of ScriptAnnotation.
type Script struct {
	// Runs is what a container's runs are numbered by, for
	// ContainerScript.ExitCodes: RunsPerPod (the default) or
	// RunsPerController.
	Runs string `json:"runs,omitempty"`
	// Containers script the pod's containers by name: its init containers,
	// sidecars and regular containers alike; "*" scripts every container
	// the map does not name.
	Containers map[string]ContainerScript `json:"containers,omitempty"`
}

// ContainerScript is what one container does. Every field is optional; a
// duration is a string Go's time.ParseDuration reads ("1.5s", "2m").
type ContainerScript struct {
	// RunFor is how long each run of the container lasts before it exits
	// by itself. Default: it runs until it is stopped; with ExitCodes, it
	// exits as soon as it starts.
	RunFor Duration `json:"runFor,omitempty"`
	// ExitCodes are the exit codes of the container's runs: run N exits
	// with ExitCodes[N], the last one repeating (see Script.Runs). Default,
	// with RunFor: 0.
	ExitCodes []int32 `json:"exitCodes,omitempty"`
	// TerminationDelay is how long the container takes to exit after its
	// SIGTERM: a stop waits for it, and a grace period shorter than it
	// ends in a kill (exit code 137). Default 0: it exits at once.
	TerminationDelay Duration `json:"terminationDelay,omitempty"`
	// TerminationExitCode is the exit code of a container that exits at
	// its SIGTERM. Default 0.
	TerminationExitCode int32 `json:"terminationExitCode,omitempty"`
	// PullDelay is how long each pull of the container's image for the pod
	// takes. Default 0.
	PullDelay Duration `json:"pullDelay,omitempty"`
	// PullFailures is how many of the first pulls of the container's image
	// for the pod fail (ErrImagePull, then ImagePullBackOff as on a real
	// node); -1: every pull fails. Default 0.
	PullFailures int `json:"pullFailures,omitempty"`
	// Startup, Liveness and Readiness give the results of the container's
	// probes of that kind over each run's life, whatever their handler
	// (exec, httpGet, tcpSocket or grpc): a probe gets the Result of the
	// last step whose After has passed since the run started, and succeeds
	// before the first step. Default: every probe succeeds. A probe the
	// container's spec does not have is not run, whatever its steps.
	Startup   []ProbeStep `json:"startup,omitempty"`
	Liveness  []ProbeStep `json:"liveness,omitempty"`
	Readiness []ProbeStep `json:"readiness,omitempty"`
}

// The results of a ProbeStep.
const (
	ProbeSuccess = "success"
	ProbeFailure = "failure"
)

// ProbeStep is one step of a probe's results over time.
type ProbeStep struct {
	// After is how long after the run started the step begins.
	After Duration `json:"after"`
	// Result is ProbeSuccess or ProbeFailure.
	Result string `json:"result"`
}

// Duration is a time.Duration written as in Go ("1.5s") in JSON.
type Duration time.Duration

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"5s\", not %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// ParseScript reads a ScriptAnnotation value. Unknown fields, values out of
// range and steps out of order are errors, naming the container.
func ParseScript(value string) (*Script, error) {
	dec := json.NewDecoder(strings.NewReader(value))
	dec.DisallowUnknownFields()
	var s Script
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	if s.Runs != "" && s.Runs != RunsPerPod && s.Runs != RunsPerController {
		return nil, fmt.Errorf("runs %q: want %q or %q", s.Runs, RunsPerPod, RunsPerController)
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range s.Containers {
			if !yield(n) {
				return
			}
		}
	})
	var errs []error
	for _, name := range names {
		if err := s.Containers[name].validate(); err != nil {
			errs = append(errs, fmt.Errorf("container %q: %w", name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &s, nil
}

func (c ContainerScript) validate() error {
	var errs []error
	for name, d := range map[string]Duration{"runFor": c.RunFor, "terminationDelay": c.TerminationDelay, "pullDelay": c.PullDelay} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s %v is negative", name, time.Duration(d)))
		}
	}
	for _, code := range append(slices.Clone(c.ExitCodes), c.TerminationExitCode) {
		if code < 0 || code > 255 {
			errs = append(errs, fmt.Errorf("exit code %d is not in [0, 255]", code))
		}
	}
	if c.PullFailures < -1 {
		errs = append(errs, fmt.Errorf("pullFailures %d: want -1 (always), 0 or more", c.PullFailures))
	}
	for kind, steps := range map[string][]ProbeStep{"startup": c.Startup, "liveness": c.Liveness, "readiness": c.Readiness} {
		for i, st := range steps {
			switch {
			case st.Result != ProbeSuccess && st.Result != ProbeFailure:
				errs = append(errs, fmt.Errorf("%s[%d]: result %q: want %q or %q", kind, i, st.Result, ProbeSuccess, ProbeFailure))
			case st.After < 0:
				errs = append(errs, fmt.Errorf("%s[%d]: after %v is negative", kind, i, time.Duration(st.After)))
			case i > 0 && st.After < steps[i-1].After:
				errs = append(errs, fmt.Errorf("%s[%d]: after %v comes before the previous step's %v", kind, i, time.Duration(st.After), time.Duration(steps[i-1].After)))
			}
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// container returns the script of the container named name: its own, or
// "*"'s.
func (s *Script) container(name string) (ContainerScript, bool) {
	if s == nil {
		return ContainerScript{}, false
	}
	if c, ok := s.Containers[name]; ok {
		return c, true
	}
	c, ok := s.Containers["*"]
	return c, ok
}

// exits says whether a run of the container ends by itself.
func (c ContainerScript) exits() bool { return len(c.ExitCodes) > 0 || c.RunFor > 0 }

// exitCode is the exit code of run n (0-based).
func (c ContainerScript) exitCode(n int) int32 {
	if len(c.ExitCodes) == 0 {
		return 0
	}
	return c.ExitCodes[min(n, len(c.ExitCodes)-1)]
}

// probeResult is the result of a probe of kind steps, elapsed after the run
// started.
func probeResult(steps []ProbeStep, elapsed time.Duration) string {
	r := ProbeSuccess
	for _, st := range steps {
		if time.Duration(st.After) > elapsed {
			break
		}
		r = st.Result
	}
	return r
}
