package server

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"
)

// ProcNodeStats reads the node's figures from /proc: CPU time from
// /proc/stat (every state but idle and iowait, in USER_HZ = 1/100 s), boot
// time from its btime, memory from /proc/meminfo (working set MemTotal −
// MemAvailable, usage MemTotal − MemFree). The kubelet reads the root
// cgroup through cAdvisor; on a machine given over to pods the figures
// are close.
type ProcNodeStats struct {
	// Root is the /proc to read. Default "/proc".
	Root string
	// Clock gives the figures' time. Default: the real clock (the Server
	// passes its own).
	Clock clock.PassiveClock
}

// userHZ is the kernel's unit of /proc/stat times on Linux.
const userHZ = 100

// NodeStats implements NodeStats.
func (p ProcNodeStats) NodeStats(_ context.Context) (statsapi.NodeStats, error) {
	root := p.Root
	if root == "" {
		root = "/proc"
	}
	c := p.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	now := metav1.NewTime(c.Now())
	var ns statsapi.NodeStats
	stat, err := os.ReadFile(root + "/stat")
	if err != nil {
		return ns, fmt.Errorf("node cpu: %w", err)
	}
	for _, line := range strings.Split(string(stat), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 8 && f[0] == "cpu":
			var busy uint64
			for i, v := range f[1:] {
				if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest time is in user already
					continue
				}
				n, _ := strconv.ParseUint(v, 10, 64)
				busy += n
			}
			nanos := busy * (1e9 / userHZ)
			ns.CPU = &statsapi.CPUStats{Time: now, UsageCoreNanoSeconds: &nanos}
		case len(f) == 2 && f[0] == "btime":
			if s, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				ns.StartTime = metav1.NewTime(time.Unix(s, 0))
			}
		}
	}
	mem, err := readMeminfo(root + "/meminfo")
	if err != nil {
		return ns, fmt.Errorf("node memory: %w", err)
	}
	total, avail, free := mem["MemTotal"], mem["MemAvailable"], mem["MemFree"]
	ws, usage := total-avail, total-free
	ns.Memory = &statsapi.MemoryStats{Time: now, AvailableBytes: &avail, UsageBytes: &usage, WorkingSetBytes: &ws}
	return ns, nil
}

// readMeminfo reads /proc/meminfo in bytes.
func readMeminfo(path string) (map[string]uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	m := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && f[1] == "kB" {
			n *= 1024
		}
		m[name] = n
	}
	if m["MemTotal"] == 0 {
		return nil, fmt.Errorf("%s: no MemTotal", path)
	}
	return m, sc.Err()
}
