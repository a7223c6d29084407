// Command lifecycle drives one pod through the podworker lifecycle with a
// logging Syncer and prints every transition:
//
//	create → synced → update → synced → kill → terminating → terminated → finished → forgotten
//
// Run it with:
//
//	go run ./examples/lifecycle
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/runtime"
)

func main() {
	verbose := flag.Bool("v", false, "also print the pod workers' own lifecycle logs")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	log := logr.Discard()
	if *verbose {
		log = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{Verbosity: 4})
	}
	if err := run(ctx, os.Stdout, log); err != nil {
		fmt.Fprintln(os.Stderr, "lifecycle:", err)
		os.Exit(1)
	}
}

// printer hands each Syncer call's line to the driver, which prints it: the
// handshake (an unbuffered channel) keeps the output in a stable order.
type printer struct {
	events chan string
}

func (p *printer) say(ctx context.Context, format string, args ...any) {
	select {
	case p.events <- fmt.Sprintf(format, args...):
	case <-ctx.Done():
	}
}

// loggingSyncer pretends to run pods: it prints every call.
type loggingSyncer struct{ p *printer }

func (s loggingSyncer) SyncPod(ctx context.Context, t podworker.SyncPodType, pod, _ *v1.Pod, _ *runtime.PodStatus) (bool, error) {
	s.p.say(ctx, "SyncPod            %-6s %s image=%s", t, pod.Name, pod.Spec.Containers[0].Image)
	return false, nil
}

func (s loggingSyncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, _ *runtime.PodStatus, gp *int64, _ func(*v1.PodStatus)) error {
	s.p.say(ctx, "SyncTerminatingPod        %s gracePeriod=%ds", pod.Name, *gp)
	return nil
}

func (s loggingSyncer) SyncTerminatingRuntimePod(ctx context.Context, rp *runtime.Pod) error {
	s.p.say(ctx, "SyncTerminatingRuntimePod %s", rp.Name)
	return nil
}

func (s loggingSyncer) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, _ *runtime.PodStatus) error {
	s.p.say(ctx, "SyncTerminatedPod         %s", pod.Name)
	return nil
}

func run(ctx context.Context, out io.Writer, log logr.Logger) error {
	p := &printer{events: make(chan string)}
	w, err := podworker.New(podworker.Options{Syncer: loggingSyncer{p: p}, Logger: log})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(ctx) }()

	wait := func() error {
		select {
		case line := <-p.events:
			fmt.Fprintln(out, line)
			return nil
		case <-time.After(10 * time.Second):
			return fmt.Errorf("no Syncer call within 10s")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	state := func(pod *v1.Pod) {
		info, ok := w.PodInfo(pod.UID)
		if !ok {
			fmt.Fprintf(out, "  -> %s forgotten by the pod workers\n", pod.Name)
			return
		}
		fmt.Fprintf(out, "  -> %s is %s (worker state %s)\n", pod.Name, info.Lifecycle, info.State)
	}

	gp := int64(30)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: "7f0c2d4e-demo", Name: "web", Namespace: "default"},
		Spec:       v1.PodSpec{TerminationGracePeriodSeconds: &gp, Containers: []v1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}

	fmt.Fprintln(out, "# create")
	w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: pod, StartTime: time.Now()})
	if err := wait(); err != nil {
		return err
	}
	waitIdle(w, pod)
	state(pod)

	fmt.Fprintln(out, "# update the image")
	updated := pod.DeepCopy()
	updated.Spec.Containers[0].Image = "nginx:1.28"
	w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, Pod: updated, StartTime: time.Now()})
	if err := wait(); err != nil {
		return err
	}
	waitIdle(w, pod)
	state(pod)

	fmt.Fprintln(out, "# kill with a 5s grace period")
	killed := make(chan struct{})
	short := int64(5)
	w.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, Pod: updated,
		KillPodOptions: &podworker.KillPodOptions{CompletedCh: killed, PodTerminationGracePeriodSecondsOverride: &short}})
	state(pod)
	if err := wait(); err != nil {
		return err
	}
	<-killed
	fmt.Fprintln(out, "  -> CompletedCh closed: no container runs or will start")
	if err := wait(); err != nil {
		return err
	}
	waitIdle(w, pod)
	state(pod)

	fmt.Fprintln(out, "# housekeeping: the pod is no longer desired")
	known := w.SyncKnownPods(nil)
	fmt.Fprintf(out, "  -> SyncKnownPods reports %d pods\n", len(known))
	state(pod)

	cancel()
	return <-runErr
}

// waitIdle waits until the pod's work loop has recorded the last result.
func waitIdle(w *podworker.Workers, pod *v1.Pod) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if info, ok := w.PodInfo(pod.UID); !ok || !info.Working {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
