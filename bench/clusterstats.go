package bench

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Percentile returns the p-th percentile (0 < p <= 100) of ds by the
// nearest-rank method: the smallest value with at least p% of the values at
// or below it. It returns 0 for no values. ds is not modified.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	if rank < 1 {
		rank = 1
	}
	if rank > len(s) {
		rank = len(s)
	}
	return s[rank-1]
}

// RequestTotal sums the samples of the counter apiserver_request_total in a
// Prometheus text exposition (the kube-apiserver's /metrics). Samples whose
// labels do not contain every one of match (e.g. `resource="pods"`) are
// skipped.
func RequestTotal(r io.Reader, match ...string) (float64, error) {
	var sum float64
	err := eachSample(r, "apiserver_request_total", func(labels string, v float64) {
		for _, m := range match {
			if !strings.Contains(labels, m) {
				return
			}
		}
		sum += v
	})
	return sum, err
}

// RuntimeOperations reads a Prometheus text exposition (podlife's
// /metrics) and returns kubelet_runtime_operations_total by operation_type:
// the CRI calls made so far.
func RuntimeOperations(r io.Reader) (map[string]float64, error) {
	ops := map[string]float64{}
	const key = `operation_type="`
	err := eachSample(r, "kubelet_runtime_operations_total", func(labels string, v float64) {
		i := strings.Index(labels, key)
		if i < 0 {
			return
		}
		op := labels[i+len(key):]
		if j := strings.IndexByte(op, '"'); j >= 0 {
			ops[op[:j]] += v
		}
	})
	return ops, err
}

// eachSample calls fn with the labels (between the braces) and the value of
// every sample of the metric name in a Prometheus text exposition.
func eachSample(r io.Reader, name string, fn func(labels string, v float64)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue // another metric with this prefix
		}
		labels := ""
		if rest[0] == '{' {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				return fmt.Errorf("metrics line %q: unterminated labels", line)
			}
			labels, rest = rest[1:end], rest[end+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return fmt.Errorf("metrics line %q: no value", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return fmt.Errorf("metrics line %q: %w", line, err)
		}
		fn(labels, v)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read metrics: %w", err)
	}
	return nil
}

// clockTicks is USER_HZ, the unit of /proc's CPU times (100 on Linux for
// every architecture Go runs on).
const clockTicks = 100

// ProcessCPU is the CPU time (user and system) process pid has used so
// far, from /proc/PID/stat.
func ProcessCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseProcStat(string(b))
}

// parseProcStat reads utime and stime (fields 14 and 15) from the text
// of /proc/PID/stat; the command name (field 2) may hold spaces and
// parentheses, so the fields are counted from its last ')'.
func parseProcStat(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("proc stat %q: no command name", s)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state): utime is f[11], stime f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("proc stat %q: %d fields after the name", s, len(f))
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("proc stat %q: %w", s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// MachineCPU is the CPU time of the whole machine so far from /proc/stat:
// busy (every state but idle and iowait) and total, summed over CPUs.
func MachineCPU() (busy, total time.Duration, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	return parseMachineStat(string(b))
}

func parseMachineStat(s string) (busy, total time.Duration, err error) {
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[0] != "cpu" {
			continue
		}
		var all, idle int64
		for i, v := range f[1:] {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("/proc/stat %q: %w", line, err)
			}
			if i >= 8 {
				break // guest and guest_nice are inside user and nice already
			}
			all += n
			if i == 3 || i == 4 { // idle, iowait
				idle += n
			}
		}
		tick := time.Second / clockTicks
		return time.Duration(all-idle) * tick, time.Duration(all) * tick, nil
	}
	return 0, 0, fmt.Errorf("/proc/stat: no cpu line")
}
