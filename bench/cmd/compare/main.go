// Command compare runs the side-by-side workloads of package bench on
// podlife, virtual-kubelet (default and permissive rate limiter) and the
// bare-goroutine reference, interleaving the engines round by round, and
// prints a Markdown table of medians with the ratio podlife/peer.
//
//	cd bench && go run ./cmd/compare
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"slices"
	"strings"
	"time"

	"github.com/podlife/podlife/bench"
)

type config struct {
	runs           int
	sizes          []int
	memPods        int
	churnCycles    int
	churnInFlight  int
	faultEvery     int64
	bound          time.Duration
	vkDefaultBound time.Duration
	skip           string
	engines        string
}

func main() {
	var c config
	var sizes string
	flag.IntVar(&c.runs, "runs", 5, "runs per engine and workload (the median is printed)")
	flag.StringVar(&sizes, "pods", "1000,10000", "pod counts of the lifecycle workload")
	flag.IntVar(&c.memPods, "mem-pods", 10000, "pods of the memory workload")
	flag.IntVar(&c.churnCycles, "churn-cycles", 100000, "create/delete cycles of the churn workload")
	flag.IntVar(&c.churnInFlight, "churn-inflight", 1000, "pods in flight in the churn workload")
	flag.Int64Var(&c.faultEvery, "fault-every", 100, "every n-th provider create or delete call fails in the churn workload (100 = 1%)")
	flag.DurationVar(&c.bound, "bound", 5*time.Minute, "time bound of one run")
	flag.DurationVar(&c.vkDefaultBound, "vk-default-bound", 15*time.Second, "time bound of one virtual-kubelet run with its default rate limiter")
	flag.StringVar(&c.skip, "skip", "", "comma-separated workloads to skip: lifecycle, memory, churn")
	flag.StringVar(&c.engines, "engines", "podlife,vk-default,vk-permissive,bare", "comma-separated engines to run, podlife first: podlife, vk-default, vk-permissive, bare")
	flag.Parse()
	for _, s := range strings.Split(sizes, ",") {
		var n int
		if _, err := fmt.Sscan(s, &n); err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "bad -pods %q\n", sizes)
			os.Exit(2)
		}
		c.sizes = append(c.sizes, n)
	}
	if err := run(os.Stdout, os.Stderr, c); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

// column is one engine in the table.
type column struct {
	name  string
	make  func() bench.Engine
	bound time.Duration
}

// row is one workload line: a value per column (NaN when not run), and
// notes per column (e.g. "bounded").
type row struct {
	label  string
	higher bool // higher is better
	unit   string
	values []float64
	notes  []string
	// bounded marks values measured on runs cut short by their bound: the
	// engine's true rate is lower, so the ratio is a lower bound.
	bounded []bool
}

func run(out, log io.Writer, c config) error {
	all := map[string]column{
		"podlife":       {"podlife", func() bench.Engine { return &bench.Podlife{} }, c.bound},
		"vk-default":    {"virtual-kubelet, default", func() bench.Engine { return &bench.VK{} }, c.vkDefaultBound},
		"vk-permissive": {"virtual-kubelet, permissive limiter", func() bench.Engine { return &bench.VK{Permissive: true} }, c.bound},
		"bare":          {"bare goroutines", func() bench.Engine { return &bench.Bare{} }, c.bound},
	}
	var cols []column
	for _, name := range strings.Split(c.engines, ",") {
		col, ok := all[name]
		if !ok {
			return fmt.Errorf("unknown engine %q", name)
		}
		cols = append(cols, col)
	}
	if len(cols) < 2 || cols[0].name != "podlife" {
		return fmt.Errorf("-engines must start with podlife and name at least one peer")
	}
	skip := func(w string) bool { return slices.Contains(strings.Split(c.skip, ","), w) }
	var rows []row
	start := time.Now()
	logf := func(format string, args ...any) {
		fmt.Fprintf(log, "[%6.1fs] "+format+"\n", append([]any{time.Since(start).Seconds()}, args...)...)
	}

	if !skip("lifecycle") {
		for _, n := range c.sizes {
			pps := make([][]float64, len(cols))
			allocs := make([][]float64, len(cols))
			notes := make([]string, len(cols))
			bounded := make([]bool, len(cols))
			for round := 0; round < c.runs; round++ {
				for i, col := range cols {
					r, err := bench.Lifecycle(col.make(), n, col.bound)
					if err != nil {
						return fmt.Errorf("lifecycle %s %d: %w", col.name, n, err)
					}
					logf("lifecycle n=%d %s: %v", n, col.name, r)
					pps[i] = append(pps[i], r.PodsPerSec)
					allocs[i] = append(allocs[i], r.AllocsPerPod)
					if !r.Complete {
						notes[i] = fmt.Sprintf("bounded: %d/%d synced, %d finished in %v", r.Synced, n, r.Finished, r.Elapsed.Round(time.Second))
						bounded[i] = true
					}
				}
			}
			rows = append(rows,
				row{label: fmt.Sprintf("(a) lifecycle, %d pods", n), higher: true, unit: "pods/s", values: medians(pps), notes: notes, bounded: bounded},
				row{label: fmt.Sprintf("(a) allocations, %d pods", n), unit: "allocs/pod", values: medians(allocs), notes: make([]string, len(cols))})
		}
	}

	if !skip("memory") {
		mem := make([][]float64, len(cols))
		withInformer := make([][]float64, len(cols))
		notes := make([]string, len(cols))
		for round := 0; round < c.runs; round++ {
			for i, col := range cols {
				e := col.make()
				if vk, ok := e.(*bench.VK); ok && !vk.Permissive {
					notes[i] = fmt.Sprintf("not run: %d pods at 10 qps take %v to create", c.memPods, time.Duration(c.memPods/10)*time.Second)
					continue
				}
				r, err := bench.Memory(e, c.memPods, col.bound)
				if err != nil {
					return fmt.Errorf("memory %s: %w", col.name, err)
				}
				informer := r
				if _, ok := e.(*bench.VK); ok {
					base, err := bench.Memory(&bench.APIOnly{}, c.memPods, col.bound)
					if err != nil {
						return fmt.Errorf("memory baseline: %w", err)
					}
					server, err := bench.Memory(&bench.APIServerOnly{}, c.memPods, col.bound)
					if err != nil {
						return fmt.Errorf("memory baseline: %w", err)
					}
					logf("memory %s: raw %v; API server + informer %v; API server alone %v", col.name, r, base, server)
					r, informer = r.Sub(base), r.Sub(server)
					notes[i] = "net of the fake API server and the informer cache"
				}
				logf("memory %s: %v", col.name, r)
				mem[i] = append(mem[i], r.PerPod())
				withInformer[i] = append(withInformer[i], informer.PerPod())
			}
		}
		infNotes := slices.Clone(notes)
		for i := range infNotes {
			if strings.HasPrefix(infNotes[i], "net") {
				infNotes[i] = "net of the fake API server only"
			}
		}
		rows = append(rows,
			row{label: fmt.Sprintf("(b) memory, %d idle synced pods, pod objects excluded", c.memPods), unit: "B/pod", values: medians(mem), notes: notes},
			row{label: fmt.Sprintf("(b) memory, %d idle synced pods, counting the informer's copy of each pod", c.memPods), unit: "B/pod", values: medians(withInformer), notes: infNotes})
	}

	if !skip("churn") {
		cps := make([][]float64, len(cols))
		notes := make([]string, len(cols))
		bounded := make([]bool, len(cols))
		for round := 0; round < c.runs; round++ {
			for i, col := range cols {
				r, err := bench.Churn(col.make(), c.churnCycles, c.churnInFlight, c.faultEvery, col.bound)
				if err != nil {
					return fmt.Errorf("churn %s: %w", col.name, err)
				}
				logf("churn %s: %v", col.name, r)
				cps[i] = append(cps[i], r.CyclesPerSec)
				notes[i] = fmt.Sprintf("%d errors retried", r.Injected)
				if !r.Complete {
					notes[i] = fmt.Sprintf("bounded: %d/%d cycles in %v; %d errors retried", r.Done, r.Cycles, r.Elapsed.Round(time.Second), r.Injected)
					bounded[i] = true
				}
			}
		}
		rows = append(rows, row{label: fmt.Sprintf("(c) churn, %d cycles, %d in flight, %.0f%% errors", c.churnCycles, c.churnInFlight, 100/float64(c.faultEvery)), higher: true, unit: "cycles/s", values: medians(cps), notes: notes, bounded: bounded})
	}

	fmt.Fprintf(out, "Machine: %d CPU (GOMAXPROCS %d), %s/%s, %s; medians of %d runs; %v in all.\n\n",
		goruntime.NumCPU(), goruntime.GOMAXPROCS(0), goruntime.GOOS, goruntime.GOARCH, goruntime.Version(), c.runs, time.Since(start).Round(time.Second))
	printTable(out, cols, rows)
	return nil
}

func medians(samples [][]float64) []float64 {
	m := make([]float64, len(samples))
	for i, s := range samples {
		if len(s) == 0 {
			m[i] = -1
			continue
		}
		s = slices.Clone(s)
		slices.Sort(s)
		if len(s)%2 == 1 {
			m[i] = s[len(s)/2]
		} else {
			m[i] = (s[len(s)/2-1] + s[len(s)/2]) / 2
		}
	}
	return m
}

func printTable(out io.Writer, cols []column, rows []row) {
	head := []string{"workload"}
	for _, c := range cols {
		head = append(head, c.name)
	}
	for _, c := range cols[1:] {
		head = append(head, "podlife/"+c.name)
	}
	fmt.Fprintf(out, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
	for _, r := range rows {
		better := "lower is better"
		if r.higher {
			better = "higher is better"
		}
		cells := []string{fmt.Sprintf("%s (%s, %s)", r.label, r.unit, better)}
		for i, v := range r.values {
			cell := format(v)
			if r.notes[i] != "" {
				cell += " (" + r.notes[i] + ")"
			}
			cells = append(cells, cell)
		}
		for i, v := range r.values[1:] {
			lowerBound := r.bounded != nil && r.bounded[i+1]
			switch {
			case r.values[0] <= 0 || v < 0:
				cells = append(cells, "–")
			case v == 0 && lowerBound:
				cells = append(cells, "∞ (no cycle finished)")
			case lowerBound:
				cells = append(cells, fmt.Sprintf("≥ %.0f×", r.values[0]/v))
			default:
				cells = append(cells, fmt.Sprintf("%.2f×", r.values[0]/v))
			}
		}
		fmt.Fprintf(out, "| %s |\n", strings.Join(cells, " | "))
	}
}

func format(v float64) string {
	switch {
	case v < 0:
		return "–"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.1f", v)
	}
}
