package eviction

import (
	"fmt"
	"syscall"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// statFs reads the space and inodes of the file system of dir.
func statFs(dir string) (*statsapi.FsStats, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return nil, fmt.Errorf("statfs %s: %w", dir, err)
	}
	bs := uint64(st.Bsize)
	capacity, avail := st.Blocks*bs, st.Bavail*bs
	used := (st.Blocks - st.Bfree) * bs
	inodes, free := st.Files, st.Ffree
	fs := &statsapi.FsStats{AvailableBytes: &avail, CapacityBytes: &capacity, UsedBytes: &used}
	if inodes > 0 { // some file systems (btrfs) report no inodes
		usedInodes := inodes - free
		fs.Inodes, fs.InodesFree, fs.InodesUsed = &inodes, &free, &usedInodes
	}
	return fs, nil
}

// readPIDs reads the most PIDs (pid_max, or threads-max when smaller)
// and the number of processes.
func readPIDs(proc string) (maxPID, procs int64, err error) {
	maxPID, err = readInt(proc + "/sys/kernel/pid_max")
	if err != nil {
		return 0, 0, err
	}
	if t, err := readInt(proc + "/sys/kernel/threads-max"); err == nil && t > 0 && t < maxPID {
		maxPID = t
	}
	var info syscall.Sysinfo_t
	if err := syscall.Sysinfo(&info); err != nil {
		return 0, 0, fmt.Errorf("sysinfo: %w", err)
	}
	return maxPID, int64(info.Procs), nil
}

func deviceOf(dir string) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return 0, fmt.Errorf("stat %s: %w", dir, err)
	}
	return uint64(st.Dev), nil
}
