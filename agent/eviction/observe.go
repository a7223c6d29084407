package eviction

import (
	"fmt"
	"math"
	"time"

	v1 "k8s.io/api/core/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// observation is what was seen of a signal: the amount available, the
// capacity, and when the stats were taken (zero: unknown).
type observation struct {
	available, capacity int64
	time                time.Time
}

// observations are a pass's observations by signal. A signal without a
// sensible observation is absent: no threshold of it is met.
type observations map[Signal]observation

// observe turns node stats into observations. Missing figures leave their
// signal out; nonsense ones (a capacity of zero, more available than the
// capacity, figures beyond int64) too, and are reported in bad.
func observe(ns *statsapi.NodeStats) (obs observations, bad map[Signal]string) {
	obs, bad = observations{}, map[Signal]string{}
	if ns == nil {
		return obs, bad
	}
	add := func(s Signal, available, capacity *uint64, t time.Time) {
		if available == nil || capacity == nil {
			return
		}
		switch {
		case *capacity == 0:
			bad[s] = "capacity is zero"
		case *capacity > math.MaxInt64 || *available > math.MaxInt64:
			bad[s] = fmt.Sprintf("figures out of range (available %d, capacity %d)", *available, *capacity)
		case *available > *capacity:
			bad[s] = fmt.Sprintf("more available (%d) than the capacity (%d)", *available, *capacity)
		default:
			obs[s] = observation{available: int64(*available), capacity: int64(*capacity), time: t}
		}
	}
	if m := ns.Memory; m != nil && m.AvailableBytes != nil && m.WorkingSetBytes != nil {
		capacity := *m.AvailableBytes + *m.WorkingSetBytes
		if capacity < *m.AvailableBytes { // overflow
			bad[SignalMemoryAvailable] = "figures out of range"
		} else {
			add(SignalMemoryAvailable, m.AvailableBytes, &capacity, m.Time.Time)
		}
	}
	if fs := ns.Fs; fs != nil {
		add(SignalNodeFsAvailable, fs.AvailableBytes, fs.CapacityBytes, fs.Time.Time)
		add(SignalNodeFsInodesFree, fs.InodesFree, fs.Inodes, fs.Time.Time)
	}
	if rt := ns.Runtime; rt != nil && rt.ImageFs != nil {
		fs := rt.ImageFs
		add(SignalImageFsAvailable, fs.AvailableBytes, fs.CapacityBytes, fs.Time.Time)
		add(SignalImageFsInodesFree, fs.InodesFree, fs.Inodes, fs.Time.Time)
	}
	if r := ns.Rlimit; r != nil && r.MaxPID != nil && r.NumOfRunningProcesses != nil {
		if *r.MaxPID <= 0 || *r.NumOfRunningProcesses < 0 {
			bad[SignalPIDAvailable] = fmt.Sprintf("nonsense PID figures (max %d, running %d)", *r.MaxPID, *r.NumOfRunningProcesses)
		} else {
			available := max(*r.MaxPID-*r.NumOfRunningProcesses, 0)
			a, c := uint64(available), uint64(*r.MaxPID)
			add(SignalPIDAvailable, &a, &c, r.Time.Time)
		}
	}
	return obs, bad
}

// thresholdsMet returns the thresholds met by the observations; with
// enforceMinReclaim, those not yet resolved (available below Value plus
// MinReclaim).
func thresholdsMet(ts []Threshold, obs observations, enforceMinReclaim bool) []Threshold {
	var out []Threshold
	for _, t := range ts {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		q := t.Value.amount(o.capacity)
		if enforceMinReclaim && t.MinReclaim != nil {
			q += t.MinReclaim.amount(o.capacity)
		}
		if q > o.available {
			out = append(out, t)
		}
	}
	return out
}

// mergeThresholds returns a with the thresholds of b it lacks.
func mergeThresholds(a, b []Threshold) []Threshold {
	out := append([]Threshold(nil), a...)
	for _, t := range b {
		found := false
		for _, x := range out {
			if x.key() == t.key() {
				found = true
				break
			}
		}
		if !found {
			out = append(out, t)
		}
	}
	return out
}

// firstObservedAt keeps when each threshold met was first seen met (now
// for the new ones) and forgets the others.
func firstObservedAt(ts []Threshold, last map[key]time.Time, now time.Time) map[key]time.Time {
	out := make(map[key]time.Time, len(ts))
	for _, t := range ts {
		at, ok := last[t.key()]
		if !ok || at.After(now) { // new, or the clock went back
			at = now
		}
		out[t.key()] = at
	}
	return out
}

// metGracePeriod returns the thresholds met for at least their grace
// period (firstObservedAt moved first sightings "after" now, from a clock
// that went back, to now).
func metGracePeriod(ts []Threshold, at map[key]time.Time, now time.Time) []Threshold {
	var out []Threshold
	for _, t := range ts {
		first, ok := at[t.key()]
		if !ok {
			continue
		}
		d := now.Sub(first)
		if d < t.GracePeriod {
			continue
		}
		out = append(out, t)
	}
	return out
}

// conditionsOf returns the node conditions the thresholds set.
func conditionsOf(ts []Threshold) []v1.NodeConditionType {
	var out []v1.NodeConditionType
	for _, t := range ts {
		c := signalCondition(t.Signal)
		if c != "" && !hasCondition(out, c) {
			out = append(out, c)
		}
	}
	return out
}

func hasCondition(cs []v1.NodeConditionType, c v1.NodeConditionType) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

// conditionsLastObservedAt records now for the conditions observed.
func conditionsLastObservedAt(cs []v1.NodeConditionType, last map[v1.NodeConditionType]time.Time, now time.Time) map[v1.NodeConditionType]time.Time {
	out := make(map[v1.NodeConditionType]time.Time, len(last)+len(cs))
	for c, at := range last {
		if at.After(now) { // the clock went back
			at = now
		}
		out[c] = at
	}
	for _, c := range cs {
		out[c] = now
	}
	return out
}

// conditionsObservedSince returns the conditions observed within period
// of now, in a fixed order, and drops the others from at.
func conditionsObservedSince(at map[v1.NodeConditionType]time.Time, period time.Duration, now time.Time) []v1.NodeConditionType {
	var out []v1.NodeConditionType
	for _, c := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		t, ok := at[c]
		if !ok {
			continue
		}
		if now.Sub(t) < period {
			out = append(out, c)
		} else {
			delete(at, c)
		}
	}
	return out
}

// updatedStats returns the thresholds whose signal's stats are newer
// than at the last pass (or carry no time): stale stats evict nothing
// more.
func updatedStats(ts []Threshold, obs, last observations) []Threshold {
	var out []Threshold
	for _, t := range ts {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		l, ok := last[t.Signal]
		if !ok || o.time.IsZero() || o.time.After(l.time) {
			out = append(out, t)
		}
	}
	return out
}

// evictionPriority orders the thresholds to reclaim: memory first, then
// the others in the order given.
func evictionPriority(ts []Threshold) []Threshold {
	out := make([]Threshold, 0, len(ts))
	for _, t := range ts {
		if t.Signal == SignalMemoryAvailable {
			out = append(out, t)
		}
	}
	for _, t := range ts {
		if t.Signal != SignalMemoryAvailable {
			out = append(out, t)
		}
	}
	return out
}
