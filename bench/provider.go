package bench

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
)

// ErrInjected is the error a Faults makes a provider return.
var ErrInjected = errors.New("injected provider error")

// Faults decides which provider calls fail. Every Every-th call fails
// (deterministically), so Every=100 fails 1% of the calls it is asked about.
// The zero value (or Every <= 0) never fails. It is safe for concurrent use.
type Faults struct {
	Every    int64
	calls    atomic.Int64
	injected atomic.Int64
}

// Fail reports whether this call should fail, and counts it if so.
func (f *Faults) Fail() bool {
	if f == nil || f.Every <= 0 {
		return false
	}
	if f.calls.Add(1)%f.Every != 0 {
		return false
	}
	f.injected.Add(1)
	return true
}

// Injected returns the number of failures injected so far.
func (f *Faults) Injected() int64 {
	if f == nil {
		return 0
	}
	return f.injected.Load()
}

// Hooks is how a provider tells the workload where a pod stands. Synced is
// called once a pod's creation (podlife: SyncPod; virtual-kubelet: CreatePod)
// has succeeded; Finished once its deletion is complete (podlife:
// SyncTerminatedPod; virtual-kubelet: DeletePod). Both receive the pod's
// index (see PodName). Faults, when set, makes creation and deletion calls
// (SyncPod, SyncTerminatingPod; CreatePod, DeletePod) fail.
type Hooks struct {
	Synced   func(idx int)
	Finished func(idx int)
	Faults   *Faults
}

// PodName returns the name of the pod with index idx. Indexes are never
// reused within a process, so names and UIDs never collide.
func PodName(idx int) string { return "p-" + strconv.Itoa(idx) }

// podIndex returns the index encoded in a pod name by PodName, or -1.
func podIndex(name string) int {
	i := strings.LastIndexByte(name, '-')
	n, err := strconv.Atoi(name[i+1:])
	if err != nil {
		return -1
	}
	return n
}
