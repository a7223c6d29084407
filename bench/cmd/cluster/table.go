package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/podlife/podlife/bench"
)

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// perPodReads formats reads per pod as "get / list / watch".
func perPodReads(r bench.ObjectReads, n int) string {
	f := func(v int) string {
		if v == 0 {
			return "0"
		}
		return fmt.Sprintf("%.2f", float64(v)/float64(n))
	}
	return f(r.Get) + " / " + f(r.List) + " / " + f(r.Watch)
}

func printTable(w io.Writer, rows []row) {
	fmt.Fprintln(w, "| engine | volumes | run | pods | all Running | all gone after delete | create→Running p50 / p99 | engine API requests / pod (total) | TokenRequests / pod | configmaps get / list / watch per pod | secrets get / list / watch per pod | all API server requests / pod (minus the harness's) | load avg at start |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		if r.res.Pods == 0 {
			fmt.Fprintf(w, "| %s | %s | %d | | failed: %v | | | | | | | | %s |\n", r.engine, r.vols, r.run, r.err, r.load)
			continue
		}
		n := r.res.Pods
		running := secs(r.res.ToRunning)
		if !r.res.RunningComplete() {
			running = fmt.Sprintf("%d/%d after %s (bound)", r.res.Running, n, secs(r.res.ToRunning))
		}
		gone := secs(r.res.ToGone)
		if r.err != nil {
			gone = fmt.Sprintf("error: %v", r.err)
		} else if !r.res.GoneComplete() {
			gone = fmt.Sprintf("%d/%d after %s (bound)", r.res.Gone, n, secs(r.res.ToGone))
		}
		lat := fmt.Sprintf("%.2f / %.2f s", r.res.P50.Seconds(), r.res.P99.Seconds())
		if !r.res.RunningComplete() {
			lat += " (of the pods Running)"
		}
		v := bench.CountVolumeRequests(r.byKey)
		fmt.Fprintf(w, "| %s | %s | %d | %d | %s | %s | %s | %.1f (%d) | %.2f | %s | %s | %.1f | %s |\n", r.engine, r.vols, r.run, n, running, gone, lat,
			float64(r.engReq)/float64(n), r.engReq, float64(v.Tokens)/float64(n), perPodReads(v.ConfigMaps, n), perPodReads(v.Secrets, n),
			r.server/float64(n), r.load)
	}
}

// group is the complete runs of one engine, size and workload.
type group struct {
	engine string
	pods   int
	vols   bench.ClusterVolumes
	rows   []row
}

// groups gathers the complete rows by engine, size and workload, in the
// order first seen.
func groups(rows []row) []*group {
	var gs []*group
	for _, r := range rows {
		if r.err != nil || r.res.Pods == 0 || !r.res.RunningComplete() || !r.res.GoneComplete() {
			continue
		}
		i := slices.IndexFunc(gs, func(g *group) bool { return g.engine == r.engine && g.pods == r.res.Pods && g.vols == r.vols })
		if i < 0 {
			gs = append(gs, &group{engine: r.engine, pods: r.res.Pods, vols: r.vols})
			i = len(gs) - 1
		}
		gs[i].rows = append(gs[i].rows, r)
	}
	return gs
}

// median is the lower median of vs (0 for none).
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

func (g *group) durations(f func(bench.ClusterResult) time.Duration) []time.Duration {
	ds := make([]time.Duration, len(g.rows))
	for i, r := range g.rows {
		ds[i] = f(r.res)
	}
	return ds
}

func (g *group) perPod(f func(row) int) float64 {
	vs := make([]float64, len(g.rows))
	for i, r := range g.rows {
		vs[i] = float64(f(r)) / float64(g.pods)
	}
	return median(vs)
}

// printMedians prints, for each engine, size and workload, the medians
// of its complete runs (the lower one of an even count), the range of
// the time to all Running, and its ratio to the median of the same
// engine and size without volumes.
func printMedians(w io.Writer, rows []row) {
	gs := groups(rows)
	fmt.Fprintln(w, "Medians of the complete runs:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| engine | volumes | pods | runs | all Running (range) | ÷ none | all gone after delete | create→Running p50 / p99 | engine API requests / pod | TokenRequests / pod | configmaps get / list / watch per pod | secrets get / list / watch per pod | load avg at start (1 min) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, g := range gs {
		running := g.durations(func(r bench.ClusterResult) time.Duration { return r.ToRunning })
		med := bench.Percentile(running, 50)
		ratio := ""
		if g.vols != bench.VolumesNone {
			i := slices.IndexFunc(gs, func(o *group) bool { return o.engine == g.engine && o.pods == g.pods && o.vols == bench.VolumesNone })
			if i >= 0 {
				base := bench.Percentile(gs[i].durations(func(r bench.ClusterResult) time.Duration { return r.ToRunning }), 50)
				ratio = fmt.Sprintf("%.2f×", med.Seconds()/base.Seconds())
			}
		}
		gone := bench.Percentile(g.durations(func(r bench.ClusterResult) time.Duration { return r.ToGone }), 50)
		p50 := bench.Percentile(g.durations(func(r bench.ClusterResult) time.Duration { return r.P50 }), 50)
		p99 := bench.Percentile(g.durations(func(r bench.ClusterResult) time.Duration { return r.P99 }), 50)
		reads := func(f func(bench.VolumeRequests) bench.ObjectReads) string {
			get := g.perPod(func(r row) int { return f(bench.CountVolumeRequests(r.byKey)).Get })
			list := g.perPod(func(r row) int { return f(bench.CountVolumeRequests(r.byKey)).List })
			watch := g.perPod(func(r row) int { return f(bench.CountVolumeRequests(r.byKey)).Watch })
			return fmt.Sprintf("%.2f / %.2f / %.2f", get, list, watch)
		}
		var loads []string
		for _, r := range g.rows {
			loads = append(loads, strings.Fields(r.load + " ?")[0])
		}
		fmt.Fprintf(w, "| %s | %s | %d | %d | %s (%s–%s) | %s | %s | %.2f / %.2f s | %.1f | %.2f | %s | %s | %s |\n",
			g.engine, g.vols, g.pods, len(g.rows), secs(med), secs(slices.Min(running)), secs(slices.Max(running)), ratio, secs(gone),
			p50.Seconds(), p99.Seconds(),
			g.perPod(func(r row) int { return r.engReq }),
			g.perPod(func(r row) int { return bench.CountVolumeRequests(r.byKey).Tokens }),
			reads(func(v bench.VolumeRequests) bench.ObjectReads { return v.ConfigMaps }),
			reads(func(v bench.VolumeRequests) bench.ObjectReads { return v.Secrets }),
			strings.Join(loads, ", "))
	}
}
