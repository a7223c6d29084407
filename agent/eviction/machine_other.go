//go:build !linux

package eviction

import (
	"errors"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

var errNotLinux = errors.New("not supported on this OS: supply a NodeStatsProvider")

func statFs(dir string) (*statsapi.FsStats, error)          { return nil, errNotLinux }
func readPIDs(proc string) (maxPID, procs int64, err error) { return 0, 0, errNotLinux }
func deviceOf(dir string) (uint64, error)                   { return 0, errNotLinux }
