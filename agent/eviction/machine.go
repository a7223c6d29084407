package eviction

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"
)

// Machine reads the node's signals from this machine (Linux): memory
// from /proc/meminfo (capacity MemTotal, working set MemTotal - MemFree -
// Inactive(file), so available MemFree + Inactive(file), as the kubelet's
// root cgroup's usage less its inactive file pages), the node and image
// file systems with statfs, and PIDs from kernel.pid_max (or threads-max
// when smaller) and the kernel's count of processes (sysinfo). It reads
// the files each call: a pass costs a few system calls.
type Machine struct {
	// RootDir is a folder on the node file system (the agent's root
	// folder, where pod volumes and logs live). Default "/".
	RootDir string
	// ImageFsDir is a folder on the file system of the runtime's images
	// (e.g. /var/lib/containerd). Default RootDir: the same file system.
	ImageFsDir string
	// ImageFsMountpoint, when set, says where the runtime keeps its
	// images, as the CRI's ImageFsInfo names it (the agent sets it from
	// its runtime). Its first answer that is a folder of this machine is
	// the image file system from then on, instead of ImageFsDir; until
	// then (an error, an empty answer, a folder not found here, as for a
	// remote runtime) each call asks again and uses ImageFsDir meanwhile.
	ImageFsMountpoint func(ctx context.Context) (string, error)
	// Clock stamps the stats. Default: the real clock.
	Clock clock.PassiveClock
	// ProcDir is where procfs is mounted, for tests. Default "/proc".
	ProcDir string

	mu      sync.Mutex
	imageFs string // ImageFsMountpoint's answer, once it gave a folder
}

var (
	_ NodeStatsProvider = (*Machine)(nil)
	_ DedicatedImageFs  = (*Machine)(nil)
)

func (m *Machine) dirs(ctx context.Context) (root, image, proc string) {
	root, image, proc = m.RootDir, m.ImageFsDir, m.ProcDir
	if root == "" {
		root = "/"
	}
	if image == "" {
		image = root
	}
	if m.ImageFsMountpoint != nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.imageFs == "" {
			if dir, err := m.ImageFsMountpoint(ctx); err == nil && dir != "" {
				if st, err := os.Stat(dir); err == nil && st.IsDir() {
					m.imageFs = dir
				}
			}
		}
		if m.imageFs != "" {
			image = m.imageFs
		}
	}
	if proc == "" {
		proc = "/proc"
	}
	return root, image, proc
}

// NodeStats reads the machine's figures. A figure that cannot be read is
// left out (its signals go unobserved); it fails only when none can be.
func (m *Machine) NodeStats(ctx context.Context) (*statsapi.NodeStats, error) {
	root, image, proc := m.dirs(ctx)
	var c clock.PassiveClock = clock.RealClock{}
	if m.Clock != nil {
		c = m.Clock
	}
	now := metav1.NewTime(c.Now())
	ns := &statsapi.NodeStats{NodeName: "", StartTime: now}
	var errs []error
	if mem, err := readMemInfo(proc + "/meminfo"); err == nil {
		avail := mem.free + mem.inactiveFile
		if avail > mem.total {
			avail = mem.total
		}
		ws := mem.total - avail
		ns.Memory = &statsapi.MemoryStats{Time: now, AvailableBytes: &avail, WorkingSetBytes: &ws}
	} else {
		errs = append(errs, err)
	}
	if fs, err := statFs(root); err == nil {
		fs.Time = now
		ns.Fs = fs
	} else {
		errs = append(errs, fmt.Errorf("node file system: %w", err))
	}
	if fs, err := statFs(image); err == nil {
		fs.Time = now
		ns.Runtime = &statsapi.RuntimeStats{ImageFs: fs}
	} else {
		errs = append(errs, fmt.Errorf("image file system: %w", err))
	}
	if maxPID, procs, err := readPIDs(proc); err == nil {
		ns.Rlimit = &statsapi.RlimitStats{Time: now, MaxPID: &maxPID, NumOfRunningProcesses: &procs}
	} else {
		errs = append(errs, err)
	}
	if ns.Memory == nil && ns.Fs == nil && ns.Runtime == nil && ns.Rlimit == nil {
		return nil, fmt.Errorf("machine stats: %w", errors.Join(errs...))
	}
	return ns, nil
}

// HasDedicatedImageFs reports whether the image file system
// (ImageFsMountpoint's folder, else ImageFsDir) is another file system
// than RootDir's.
func (m *Machine) HasDedicatedImageFs(ctx context.Context) (bool, error) {
	root, image, _ := m.dirs(ctx)
	if root == image {
		return false, nil
	}
	a, err := deviceOf(root)
	if err != nil {
		return false, err
	}
	b, err := deviceOf(image)
	if err != nil {
		return false, err
	}
	return a != b, nil
}

type memInfo struct{ total, free, inactiveFile uint64 }

// readMemInfo reads MemTotal, MemFree and Inactive(file) of a meminfo
// file, in bytes.
func readMemInfo(path string) (memInfo, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return memInfo{}, err
	}
	var mi memInfo
	found := 0
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		var dst *uint64
		switch f[0] {
		case "MemTotal:":
			dst = &mi.total
		case "MemFree:":
			dst = &mi.free
		case "Inactive(file):":
			dst = &mi.inactiveFile
		default:
			continue
		}
		kb, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil || kb > math.MaxUint64/1024 {
			return memInfo{}, fmt.Errorf("%s: bad %s %q", path, f[0], f[1])
		}
		*dst = kb * 1024
		found++
	}
	if found != 3 || mi.total == 0 {
		return memInfo{}, fmt.Errorf("%s: MemTotal, MemFree or Inactive(file) missing", path)
	}
	return mi, nil
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}
