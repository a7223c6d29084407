package eviction

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Signal is an eviction signal: a resource of the node whose available
// amount is compared with thresholds (the kubelet's evictionapi.Signal).
type Signal string

// The signals of the kubelet that this package observes.
const (
	// SignalMemoryAvailable is the memory available on the node: its
	// capacity less its working set (the kubelet's: the root memory
	// cgroup's usage less its inactive file pages).
	SignalMemoryAvailable Signal = "memory.available"
	// SignalNodeFsAvailable is the space available on the file system of
	// the agent's root folder (pod volumes, logs).
	SignalNodeFsAvailable Signal = "nodefs.available"
	// SignalNodeFsInodesFree is the free inodes of that file system.
	SignalNodeFsInodesFree Signal = "nodefs.inodesFree"
	// SignalImageFsAvailable is the space available on the file system
	// of the container runtime's images and writable layers.
	SignalImageFsAvailable Signal = "imagefs.available"
	// SignalImageFsInodesFree is the free inodes of that file system.
	SignalImageFsInodesFree Signal = "imagefs.inodesFree"
	// SignalPIDAvailable is the process IDs available: the kernel's
	// pid_max less the processes running.
	SignalPIDAvailable Signal = "pid.available"
)

// Signals lists every signal the package observes, in a fixed order.
var signals = []Signal{
	SignalMemoryAvailable, SignalNodeFsAvailable, SignalNodeFsInodesFree,
	SignalImageFsAvailable, SignalImageFsInodesFree, SignalPIDAvailable,
}

// Signals returns every signal the package observes.
func Signals() []Signal { return slices.Clone(signals) }

// Resources that pressure is reported and ranked on, beside
// v1.ResourceMemory and v1.ResourceEphemeralStorage (the kubelet's
// resourceInodes and resourcePids).
const (
	resourceInodes v1.ResourceName = "inodes"
	resourcePIDs   v1.ResourceName = "pids"
)

// signalResource is the resource each signal measures.
func signalResource(s Signal) v1.ResourceName {
	switch s {
	case SignalMemoryAvailable:
		return v1.ResourceMemory
	case SignalNodeFsAvailable, SignalImageFsAvailable:
		return v1.ResourceEphemeralStorage
	case SignalNodeFsInodesFree, SignalImageFsInodesFree:
		return resourceInodes
	case SignalPIDAvailable:
		return resourcePIDs
	}
	return ""
}

// signalCondition is the node condition a met threshold of the signal
// sets.
func signalCondition(s Signal) v1.NodeConditionType {
	switch s {
	case SignalMemoryAvailable:
		return v1.NodeMemoryPressure
	case SignalNodeFsAvailable, SignalNodeFsInodesFree, SignalImageFsAvailable, SignalImageFsInodesFree:
		return v1.NodeDiskPressure
	case SignalPIDAvailable:
		return v1.NodePIDPressure
	}
	return ""
}

func validSignal(s Signal) bool { return signalResource(s) != "" }

// ThresholdValue is an amount, absolute (Quantity) or relative to the
// signal's capacity (Percentage, in [0, 1]).
type ThresholdValue struct {
	// Quantity is an absolute amount (bytes, inodes, PIDs), or nil.
	Quantity *resource.Quantity
	// Percentage is a fraction of the capacity, used when Quantity is nil.
	Percentage float32
}

// amount is the value in units of the signal, for a capacity.
func (v ThresholdValue) amount(capacity int64) int64 {
	if v.Quantity != nil {
		return v.Quantity.Value()
	}
	return int64(float64(capacity) * float64(v.Percentage))
}

// String writes the value as the flags take it ("100Mi", "10%").
func (v ThresholdValue) String() string {
	if v.Quantity != nil {
		return v.Quantity.String()
	}
	// To 1/10000 of a percent: a float32 percentage is no more precise.
	return strconv.FormatFloat(math.Round(float64(v.Percentage)*1e6)/1e4, 'f', -1, 64) + "%"
}

// Threshold is a threshold of a signal: met when the signal's available
// amount is less than Value (the kubelet's only operator, LessThan).
type Threshold struct {
	// Signal is what is measured.
	Signal Signal
	// Value is the amount below which the threshold is met.
	Value ThresholdValue
	// GracePeriod is how long the threshold must be met before pods are
	// evicted for it: zero for a hard threshold, positive for a soft one.
	GracePeriod time.Duration
	// MinReclaim, once the threshold was met, is how much more than Value
	// must be available for it to count as resolved. Nil: nothing more.
	MinReclaim *ThresholdValue
}

// Hard reports whether t is a hard threshold (no grace period).
func (t Threshold) Hard() bool { return t.GracePeriod == 0 }

// String writes t as the flags do ("memory.available<100Mi").
func (t Threshold) String() string { return string(t.Signal) + "<" + t.Value.String() }

// key identifies a threshold among the Manager's (one hard and one soft
// per signal at most).
type key struct {
	signal Signal
	soft   bool
}

func (t Threshold) key() key { return key{t.Signal, !t.Hard()} }

// DefaultHard returns the kubelet's default hard thresholds (evictionHard
// on Linux): memory.available<100Mi, nodefs.available<10%,
// nodefs.inodesFree<5%, imagefs.available<15%, imagefs.inodesFree<5%.
func DefaultHard() map[string]string {
	return map[string]string{
		string(SignalMemoryAvailable):   "100Mi",
		string(SignalNodeFsAvailable):   "10%",
		string(SignalNodeFsInodesFree):  "5%",
		string(SignalImageFsAvailable):  "15%",
		string(SignalImageFsInodesFree): "5%",
	}
}

// ParseThresholds builds thresholds from the kubelet's configuration maps
// (the values of --eviction-hard, --eviction-soft,
// --eviction-soft-grace-period and --eviction-minimum-reclaim, keyed by
// signal): hard and soft thresholds as "100Mi" or "10%", grace periods as
// durations ("1m30s"), minimum reclaims as quantities or percentages. A
// soft threshold needs a grace period; a threshold of 0% is no threshold
// (the kubelet's way to turn a default off). The thresholds come hard
// first, each group in the order of Signals.
func ParseThresholds(hard, soft, softGracePeriod, minimumReclaim map[string]string) ([]Threshold, error) {
	var errs []error
	hardT, err := parseStatements(hard)
	errs = append(errs, err)
	softT, err := parseStatements(soft)
	errs = append(errs, err)
	grace, err := parseGracePeriods(softGracePeriod)
	errs = append(errs, err)
	reclaim, err := parseMinimumReclaims(minimumReclaim)
	errs = append(errs, err)
	for i := range softT {
		p, ok := grace[softT[i].Signal]
		if !ok || p == 0 {
			errs = append(errs, fmt.Errorf("grace period must be specified for the soft eviction threshold %v", softT[i].Signal))
			continue
		}
		softT[i].GracePeriod = p
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := append(hardT, softT...)
	for i := range out {
		if r, ok := reclaim[out[i].Signal]; ok {
			out[i].MinReclaim = &r
		}
	}
	return out, nil
}

// sortedSignals returns the keys of m in the order of Signals, unknown
// ones last and sorted.
func sortedSignals(m map[string]string) []string {
	keys := slices.Collect(maps.Keys(m))
	rank := func(k string) int {
		if i := slices.Index(signals, Signal(k)); i >= 0 {
			return i
		}
		return len(signals)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return keys
}

func parseStatements(m map[string]string) ([]Threshold, error) {
	var out []Threshold
	var errs []error
	for _, k := range sortedSignals(m) {
		t, err := parseStatement(Signal(k), m[k])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if t != nil {
			out = append(out, *t)
		}
	}
	return out, errors.Join(errs...)
}

func parseStatement(s Signal, val string) (*Threshold, error) {
	if !validSignal(s) {
		return nil, fmt.Errorf("unsupported eviction signal %v", s)
	}
	val = strings.TrimSpace(val)
	if strings.HasSuffix(val, "%") {
		p, err := parsePercentage(val)
		if err != nil {
			return nil, fmt.Errorf("eviction threshold %v: %w", s, err)
		}
		if p < 0 {
			return nil, fmt.Errorf("eviction percentage threshold %v must be >= 0%%: %s", s, val)
		}
		if p > 1 {
			return nil, fmt.Errorf("eviction percentage threshold %v must be <= 100%%: %s", s, val)
		}
		if p == 0 {
			return nil, nil
		}
		return &Threshold{Signal: s, Value: ThresholdValue{Percentage: p}}, nil
	}
	q, err := resource.ParseQuantity(val)
	if err != nil {
		return nil, fmt.Errorf("eviction threshold %v: %q: %w", s, val, err)
	}
	if q.Sign() <= 0 {
		return nil, fmt.Errorf("eviction threshold %v must be positive: %s", s, &q)
	}
	return &Threshold{Signal: s, Value: ThresholdValue{Quantity: &q}}, nil
}

func parsePercentage(val string) (float32, error) {
	f, err := strconv.ParseFloat(strings.TrimSuffix(val, "%"), 32)
	if err != nil {
		return 0, fmt.Errorf("invalid percentage %q", val)
	}
	return float32(f) / 100, nil
}

func parseGracePeriods(m map[string]string) (map[Signal]time.Duration, error) {
	out := map[Signal]time.Duration{}
	var errs []error
	for _, k := range sortedSignals(m) {
		s := Signal(k)
		if !validSignal(s) {
			errs = append(errs, fmt.Errorf("unsupported eviction signal %v", s))
			continue
		}
		d, err := time.ParseDuration(strings.TrimSpace(m[k]))
		if err != nil {
			errs = append(errs, fmt.Errorf("invalid eviction grace period for %v: %w", s, err))
			continue
		}
		if d < 0 {
			errs = append(errs, fmt.Errorf("invalid eviction grace period specified: %v, must be a positive value", m[k]))
			continue
		}
		out[s] = d
	}
	return out, errors.Join(errs...)
}

func parseMinimumReclaims(m map[string]string) (map[Signal]ThresholdValue, error) {
	out := map[Signal]ThresholdValue{}
	var errs []error
	for _, k := range sortedSignals(m) {
		s, val := Signal(k), strings.TrimSpace(m[k])
		if !validSignal(s) {
			errs = append(errs, fmt.Errorf("unsupported eviction signal %v", s))
			continue
		}
		if strings.HasSuffix(val, "%") {
			p, err := parsePercentage(val)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("eviction minimum reclaim %v: %w", s, err))
			case p < 0:
				errs = append(errs, fmt.Errorf("negative eviction minimum reclaim specified for %v", s))
			case p > 1:
				errs = append(errs, fmt.Errorf("eviction minimum reclaim percentage %v must be <= 100%%: %s", s, val))
			default:
				out[s] = ThresholdValue{Percentage: p}
			}
			continue
		}
		q, err := resource.ParseQuantity(val)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("eviction minimum reclaim %v: %q: %w", s, val, err))
		case q.Sign() < 0:
			errs = append(errs, fmt.Errorf("negative eviction minimum reclaim specified for %v", s))
		default:
			out[s] = ThresholdValue{Quantity: &q}
		}
	}
	return out, errors.Join(errs...)
}
