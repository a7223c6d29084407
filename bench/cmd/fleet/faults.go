package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podlife/podlife/bench"
)

// faultResult is what an engine's nodes went through while its API server
// slowed down (every request of the engine delayed at the proxy), and then
// while the API server was restarted.
type faultResult struct {
	slow, restart phaseResult
	// apiDown is from the API server's kill to its first ready answer.
	apiDown time.Duration
	// leasesBack is from the API server's first ready answer to every
	// node's Lease renewed after it.
	leasesBack time.Duration
	// failed is the engine's requests answered with an error (or not at
	// all: 502 from the proxy) over both phases, by "verb resource code".
	failed map[string]int
	// exited: the engine's process ended during the faults.
	exited bool
	err    error
}

// phaseResult is one fault's observations.
type phaseResult struct {
	// maxLeaseAge is the longest any node's Lease went unrenewed, as
	// sampled every two seconds.
	maxLeaseAge time.Duration
	// maxNotReady is the most nodes whose Ready condition was not True in
	// one sample; notReadyNodes how many distinct nodes ever were.
	maxNotReady, notReadyNodes int
	// pods created at the phase's start: all Running after, p50, p99.
	podsRunning, p50, p99 time.Duration
}

// monitor samples the nodes' Leases and Ready conditions every two
// seconds, straight from the API server (not through the engine's proxy).
type monitor struct {
	admin kubernetes.Interface
	names map[string]bool

	mu       sync.Mutex
	cur      *phaseResult
	notReady map[string]bool
	renewed  map[string]time.Time // last renewTime seen per node
}

func newMonitor(admin kubernetes.Interface, names []string) *monitor {
	m := &monitor{admin: admin, names: map[string]bool{}, renewed: map[string]time.Time{}}
	for _, n := range names {
		m.names[n] = true
	}
	return m
}

// begin makes the following samples count for p.
func (m *monitor) begin(p *phaseResult) {
	m.mu.Lock()
	m.cur, m.notReady = p, map[string]bool{}
	m.mu.Unlock()
}

// run samples until ctx ends.
func (m *monitor) run(ctx context.Context) {
	for ctx.Err() == nil {
		m.sample(ctx)
		sleep(ctx, 2*time.Second)
	}
}

func (m *monitor) sample(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	leases, err := m.admin.CoordinationV1().Leases(v1.NamespaceNodeLease).List(sctx, metav1.ListOptions{})
	if err != nil {
		return // the API server is away: the next answer shows the ages
	}
	nodes, err := m.admin.CoreV1().Nodes().List(sctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.cur
	for i := range leases.Items {
		l := &leases.Items[i]
		if !m.names[l.Name] {
			continue
		}
		renew := leaseRenewed(l)
		m.renewed[l.Name] = renew
		if p != nil && !renew.IsZero() {
			p.maxLeaseAge = max(p.maxLeaseAge, now.Sub(renew))
		}
	}
	if p == nil {
		return
	}
	notReady := 0
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !m.names[n.Name] {
			continue
		}
		ready := false
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue {
				ready = true
			}
		}
		if !ready {
			notReady++
			m.notReady[n.Name] = true
		}
	}
	p.maxNotReady = max(p.maxNotReady, notReady)
	p.notReadyNodes = len(m.notReady)
}

func leaseRenewed(l *coordinationv1.Lease) time.Time {
	if l.Spec.RenewTime != nil {
		return l.Spec.RenewTime.Time
	}
	return time.Time{}
}

// allRenewedAfter reports whether every node's Lease was seen renewed
// after t.
func (m *monitor) allRenewedAfter(t time.Time) (bool, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	late := 0
	for n := range m.names {
		if !m.renewed[n].After(t) {
			late++
		}
	}
	return late == 0, late
}

// faults runs the two faults on an engine whose nodes are names, with its
// pods p-000000 to p-(from-1) running; it creates c.faultPods pods at the
// start of each, from p-(from), and returns how many it created.
func faults(ctx context.Context, c config, admin kubernetes.Interface, t *podTracker, proxy *bench.CountingProxy, procs []*bench.Process, ns string, names []string, from int) (fr faultResult, created int) {
	mctx, stop := context.WithCancel(ctx)
	m := newMonitor(admin, names)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); m.run(mctx) }()
	defer wg.Wait() // after stop: deferred calls run last first
	defer stop()
	failedBefore := proxy.Failed()
	defer func() {
		fr.failed, _ = bench.Diff(failedBefore, proxy.Failed())
		for _, p := range procs {
			fr.exited = fr.exited || p.Exited()
		}
	}()
	podsOf := func(p *phaseResult) error {
		lat, all, err := createAndWait(ctx, c, admin, t, ns, names, from+created, c.faultPods)
		created += c.faultPods
		if err != nil {
			return err
		}
		slices.Sort(lat)
		p.podsRunning, p.p50, p.p99 = all, lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
		return nil
	}

	// A clean start: every Lease renewed since now.
	calm := time.Now()
	if !waitFor(ctx, c.timeout, func() bool { ok, _ := m.allRenewedAfter(calm); return ok }) {
		_, late := m.allRenewedAfter(calm)
		fr.err = fmt.Errorf("before the faults: %d Leases not renewed in %v", late, c.timeout)
		return fr, created
	}
	// 1. Every request of the engine waits c.faultDelay, for c.faultFor.
	logf("faults: every request delayed %v for %v", c.faultDelay, c.faultFor)
	m.begin(&fr.slow)
	start := time.Now()
	proxy.SetDelay(c.faultDelay)
	err := podsOf(&fr.slow)
	sleep(ctx, time.Until(start.Add(c.faultFor)))
	proxy.SetDelay(0)
	if err != nil {
		fr.err = fmt.Errorf("slow API: %w", err)
		return fr, created
	}
	// Back to normal: every Lease renewed since.
	back := time.Now()
	if !waitFor(ctx, c.timeout, func() bool { ok, _ := m.allRenewedAfter(back); return ok }) {
		_, late := m.allRenewedAfter(back)
		fr.err = fmt.Errorf("slow API: %d Leases not renewed %v after", late, c.timeout)
		return fr, created
	}
	logf("faults: slow API: longest Lease age %v, at most %d nodes not Ready (%d in all), %d pods Running in %v",
		fr.slow.maxLeaseAge.Round(time.Millisecond), fr.slow.maxNotReady, fr.slow.notReadyNodes, c.faultPods, fr.slow.podsRunning.Round(time.Millisecond))

	// 2. The API server is killed, stays away c.faultDown, and starts
	// again with the same flags.
	logf("faults: restarting the API server (away %v before it starts again)", c.faultDown)
	m.begin(&fr.restart)
	ready, down, err := restartAPIServer(ctx, c.apiDir, c.faultDown, admin)
	fr.apiDown = down
	if err != nil {
		fr.err = fmt.Errorf("restart: %w", err)
		return fr, created
	}
	errc := make(chan error, 1)
	go func() { errc <- podsOf(&fr.restart) }()
	if !waitFor(ctx, c.timeout, func() bool { ok, _ := m.allRenewedAfter(ready); return ok }) {
		_, late := m.allRenewedAfter(ready)
		fr.err = fmt.Errorf("restart: %d Leases not renewed %v after", late, c.timeout)
		return fr, created
	}
	fr.leasesBack = time.Since(ready)
	if err := <-errc; err != nil {
		fr.err = fmt.Errorf("restart: %w", err)
		return fr, created
	}
	// The node lifecycle controller judges a node by its Lease's age over
	// --node-monitor-grace-period (40 s here): watch that long again.
	sleep(ctx, 45*time.Second)
	logf("faults: restart: API away %v, every Lease renewed %v after, longest Lease age %v, at most %d nodes not Ready (%d in all), %d pods Running in %v",
		fr.apiDown.Round(time.Millisecond), fr.leasesBack.Round(time.Millisecond), fr.restart.maxLeaseAge.Round(time.Millisecond),
		fr.restart.maxNotReady, fr.restart.notReadyNodes, c.faultPods, fr.restart.podsRunning.Round(time.Millisecond))
	return fr, created
}

// waitFor polls cond every half second until it holds, or timeout.
func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		sleep(ctx, 500*time.Millisecond)
	}
	return true
}

// restartAPIServer kills the kube-apiserver of scripts/apiserver/start.sh
// (its pid file in apiDir), waits away, and starts it again with the same
// command line, folder and environment, its output appended to its log.
// It returns when the API server answers /readyz again: when, and how long
// after the stop.
func restartAPIServer(ctx context.Context, apiDir string, away time.Duration, admin kubernetes.Interface) (time.Time, time.Duration, error) {
	pidFile := filepath.Join(apiDir, "kube-apiserver.pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return time.Time{}, 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("%s: %w", pidFile, err)
	}
	proc := fmt.Sprintf("/proc/%d/", pid)
	cmdline, err := os.ReadFile(proc + "cmdline")
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("the API server's command line: %w", err)
	}
	environ, err := os.ReadFile(proc + "environ")
	if err != nil {
		return time.Time{}, 0, err
	}
	dir, err := os.Readlink(proc + "cwd")
	if err != nil {
		return time.Time{}, 0, err
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if len(args) == 0 || !strings.HasSuffix(args[0], "kube-apiserver") {
		return time.Time{}, 0, fmt.Errorf("pid %d is not a kube-apiserver: %q", pid, args)
	}
	// Killed, as by a crash or an OOM kill: asked to stop (SIGTERM), the
	// API server would keep its port closed for the minute its HTTP
	// server waits for the watches to end.
	stopped := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return time.Time{}, 0, err
	}
	for syscall.Kill(pid, 0) == nil { // not our child: poll
		sleep(ctx, 50*time.Millisecond)
	}
	sleep(ctx, away)
	log, err := os.OpenFile(filepath.Join(apiDir, "kube-apiserver.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return time.Time{}, 0, err
	}
	defer log.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, log, log
	cmd.Env = strings.Split(strings.TrimRight(string(environ), "\x00"), "\x00")
	// A session of its own: the API server outlives this harness, as it
	// would have from start.sh.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return time.Time{}, 0, fmt.Errorf("start the API server again: %w", err)
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		return time.Time{}, 0, err
	}
	go func() { _ = cmd.Wait() }() // reap it if it ends before the harness
	ok := waitFor(ctx, 3*time.Minute, func() bool {
		// Not too short: a busy API server answers slowly.
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := admin.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(rctx)
		return err == nil
	})
	if !ok {
		return time.Time{}, 0, errors.New("the API server is not ready 3 minutes after its start")
	}
	now := time.Now()
	return now, now.Sub(stopped), nil
}

// printFaults prints the fault results as a table.
func printFaults(out io.Writer, rs []result) {
	fmt.Fprintln(out, "| engine | nodes × pods | slow API: longest Lease age | not Ready (most at once / in all) | pods Running in (p50 / p99) | restart: API away | every Lease renewed after | longest Lease age | not Ready | pods Running in (p50 / p99) | failed requests | process exited |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		f := r.faults
		if f == nil {
			continue
		}
		failed := 0
		for _, n := range f.failed {
			failed += n
		}
		ms := func(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }
		fmt.Fprintf(out, "| %s | %d × %d | %s | %d / %d | %s (%s / %s) | %s | %s | %s | %d / %d | %s (%s / %s) | %d | %v |",
			r.engine, r.nodes, r.pods, ms(f.slow.maxLeaseAge), f.slow.maxNotReady, f.slow.notReadyNodes,
			ms(f.slow.podsRunning), ms(f.slow.p50), ms(f.slow.p99),
			ms(f.apiDown), ms(f.leasesBack), ms(f.restart.maxLeaseAge), f.restart.maxNotReady, f.restart.notReadyNodes,
			ms(f.restart.podsRunning), ms(f.restart.p50), ms(f.restart.p99), failed, f.exited)
		if f.err != nil {
			fmt.Fprintf(out, " error: %v", f.err)
		}
		fmt.Fprintln(out)
	}
}
