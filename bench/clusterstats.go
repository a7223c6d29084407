package bench

import (
	"bufio"
	"fmt"
	"io"
	"math"
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
