package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/podlife/podlife/bench"
)

// cpuProcess is one process whose CPU time a run reports.
type cpuProcess struct {
	name string
	pid  int
}

// cpuProcesses are the control plane's processes (their pid files in
// apiDir), the engine's (enginePID; 0 when it runs in the harness) and
// the harness's own.
func cpuProcesses(apiDir, eng string, enginePID int) []cpuProcess {
	var ps []cpuProcess
	for _, name := range []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler"} {
		b, err := os.ReadFile(filepath.Join(apiDir, name+".pid"))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			ps = append(ps, cpuProcess{name, pid})
		}
	}
	if enginePID > 0 {
		ps = append(ps, cpuProcess{eng, enginePID})
	}
	return append(ps, cpuProcess{"harness", os.Getpid()})
}

// cpuReading is the CPU time of each process (-1: unreadable) and of the
// machine at one moment.
type cpuReading struct {
	when        time.Time
	procs       []time.Duration
	busy, total time.Duration
}

func readCPU(ps []cpuProcess) cpuReading {
	r := cpuReading{when: time.Now(), procs: make([]time.Duration, len(ps))}
	for i, p := range ps {
		d, err := bench.ProcessCPU(p.pid)
		if err != nil {
			d = -1
		}
		r.procs[i] = d
	}
	r.busy, r.total, _ = bench.MachineCPU()
	return r
}

// sub formats the CPU used between before and r: seconds per process,
// then the machine's busy time against what its CPUs had.
func (r cpuReading) sub(before cpuReading, ps []cpuProcess) string {
	var b strings.Builder
	for i, p := range ps {
		if r.procs[i] < 0 || before.procs[i] < 0 {
			continue
		}
		fmt.Fprintf(&b, "%s %.2f s, ", p.name, (r.procs[i] - before.procs[i]).Seconds())
	}
	fmt.Fprintf(&b, "machine busy %.2f of %.2f CPU-s in %.2f s (every process of the machine)",
		(r.busy - before.busy).Seconds(), (r.total - before.total).Seconds(), r.when.Sub(before.when).Seconds())
	return b.String()
}
