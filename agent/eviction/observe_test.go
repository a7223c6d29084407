package eviction

import (
	"testing"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Any node stats give observations with 0 <= available <= capacity and a
// positive capacity, or none.
func FuzzObserve(f *testing.F) {
	f.Add(uint64(1), uint64(2), uint64(3), uint64(4), int64(5), int64(6), true)
	f.Add(^uint64(0), ^uint64(0), uint64(0), uint64(0), int64(-1), int64(0), false)
	f.Fuzz(func(t *testing.T, a, b, c, d uint64, p, q int64, nilSome bool) {
		ns := &statsapi.NodeStats{
			Memory:  &statsapi.MemoryStats{AvailableBytes: &a, WorkingSetBytes: &b},
			Fs:      &statsapi.FsStats{AvailableBytes: &c, CapacityBytes: &d, InodesFree: &a, Inodes: &c},
			Runtime: &statsapi.RuntimeStats{ImageFs: &statsapi.FsStats{AvailableBytes: &d, CapacityBytes: &c}},
			Rlimit:  &statsapi.RlimitStats{MaxPID: &p, NumOfRunningProcesses: &q},
		}
		if nilSome {
			ns.Memory.WorkingSetBytes = nil
			ns.Runtime = nil
		}
		obs, _ := observe(ns)
		for s, o := range obs {
			if o.capacity <= 0 || o.available < 0 || o.available > o.capacity {
				t.Fatalf("%s: %+v", s, o)
			}
		}
		ts, _ := ParseThresholds(DefaultHard(), nil, nil, nil)
		_ = thresholdsMet(ts, obs, true)
	})
}
