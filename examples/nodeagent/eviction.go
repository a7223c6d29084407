package main

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/podlife/podlife/agent/eviction"
)

// evictionFlags are the kubelet's eviction flags.
type evictionFlags struct {
	hard, soft, softGracePeriod, minimumReclaim *mapFlag
	pressureTransitionPeriod                    time.Duration
	maxPodGracePeriod                           int
}

func (e *evictionFlags) register(fs *flag.FlagSet) {
	e.hard = &mapFlag{sep: "<", m: eviction.DefaultHard()}
	e.soft = &mapFlag{sep: "<", m: map[string]string{}}
	e.softGracePeriod = &mapFlag{sep: "=", m: map[string]string{}}
	e.minimumReclaim = &mapFlag{sep: "=", m: map[string]string{}}
	fs.Var(e.hard, "eviction-hard", `hard eviction thresholds ("memory.available<1Gi,nodefs.available<10%"): a pod is evicted at once (grace 1 s) when one is met; given, it replaces the defaults; empty: none`)
	fs.Var(e.soft, "eviction-soft", `soft eviction thresholds, as --eviction-hard: met for their --eviction-soft-grace-period, a pod is evicted with --eviction-max-pod-grace-period`)
	fs.Var(e.softGracePeriod, "eviction-soft-grace-period", `grace periods of the soft thresholds ("memory.available=1m30s"); each soft threshold needs one`)
	fs.Var(e.minimumReclaim, "eviction-minimum-reclaim", `how much more than a threshold must be available for its pressure to end ("memory.available=0Mi,nodefs.available=500Mi", quantities or percentages)`)
	fs.DurationVar(&e.pressureTransitionPeriod, "eviction-pressure-transition-period", eviction.DefaultPressureTransitionPeriod, "how long a pressure condition stays on after its thresholds stopped being met")
	fs.IntVar(&e.maxPodGracePeriod, "eviction-max-pod-grace-period", 0, "grace period in seconds of pods evicted for a soft threshold")
}

// options checks the flags and returns the eviction manager's options
// (the agent supplies the rest).
func (e *evictionFlags) options() (*eviction.Options, error) {
	th, err := eviction.ParseThresholds(e.hard.m, e.soft.m, e.softGracePeriod.m, e.minimumReclaim.m)
	if err != nil {
		return nil, fmt.Errorf("eviction flags: %w", err)
	}
	if e.pressureTransitionPeriod < 0 {
		return nil, fmt.Errorf("--eviction-pressure-transition-period %s: must not be negative", e.pressureTransitionPeriod)
	}
	if e.maxPodGracePeriod < 0 {
		return nil, fmt.Errorf("--eviction-max-pod-grace-period %d: must not be negative", e.maxPodGracePeriod)
	}
	if th == nil {
		th = []eviction.Threshold{} // none, not the defaults
	}
	return &eviction.Options{
		Thresholds:               th,
		PressureTransitionPeriod: e.pressureTransitionPeriod,
		MaxPodGracePeriodSeconds: int64(e.maxPodGracePeriod),
	}, nil
}

// mapFlag is a map flag as the kubelet's: comma-separated KEY<SEP>VALUE
// pairs. The first use on the command line replaces the default; later
// ones add to it; an empty value leaves it empty.
type mapFlag struct {
	sep  string
	m    map[string]string
	used bool
}

func (f *mapFlag) String() string {
	if f == nil {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(f.m)) {
		parts = append(parts, k+f.sep+f.m[k])
	}
	return strings.Join(parts, ",")
}

func (f *mapFlag) Set(s string) error {
	if !f.used {
		f.m, f.used = map[string]string{}, true
	}
	for _, pair := range strings.Split(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, f.sep)
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("%q: want KEY%sVALUE", pair, f.sep)
		}
		f.m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return nil
}
