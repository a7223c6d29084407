// Command fakecri serves runtime/fakecri on a unix socket, as a standalone
// CRI runtime for tools such as crictl and critest (scripts/critest.sh):
//
//	go run ./examples/fakecri -socket /tmp/fakecri.sock -log /tmp/fakecri.log
//
// The project's test image (localhost/podlife/pause:1.0) is present at start;
// any other image can be pulled. It serves until SIGINT or SIGTERM.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/podlife/podlife/runtime/fakecri"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fakecri:", err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("fakecri", flag.ContinueOnError)
	fs.SetOutput(stderr)
	socket := fs.String("socket", "/tmp/fakecri.sock", "unix socket to serve the CRI on")
	logPath := fs.String("log", "", "log file (default: standard error)")
	verbosity := fs.Int("v", 0, "log verbosity")
	images := fs.String("images", "localhost/podlife/pause:1.0", "comma-separated images present at start")
	registry := fs.String("registry", "", "JSON file: a list of fakecri.RegistryImage, the images pulls resolve to")
	networkReady := fs.Bool("network-ready", true, "report NetworkReady, as a runtime with a pod network does")
	pullLatency := fs.Duration("pull-latency", 20*time.Millisecond, "how long a PullImage takes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	out := stderr
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("open log: %w", err)
		}
		defer f.Close()
		out = f
	}
	opts := fakecri.Options{Images: strings.Split(*images, ","), NetworkReady: *networkReady, PullLatency: *pullLatency}
	if *registry != "" {
		b, err := os.ReadFile(*registry)
		if err != nil {
			return fmt.Errorf("read registry: %w", err)
		}
		if err := json.Unmarshal(b, &opts.Registry); err != nil {
			return fmt.Errorf("parse registry %s: %w", *registry, err)
		}
	}
	opts.Logger = funcr.New(func(prefix, args string) { fmt.Fprintln(out, prefix, args) }, funcr.Options{Verbosity: *verbosity})
	return serve(signalContext(), opts, *socket)
}

func signalContext() context.Context {
	ctx, _ := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	return ctx
}

// serve runs a fakecri server on socket until ctx is done.
func serve(ctx context.Context, opts fakecri.Options, socket string) error {
	logger := opts.Logger
	srv := fakecri.New(opts)
	endpoint, err := srv.StartUnix(socket)
	if err != nil {
		return err
	}
	logger.Info("serving", "endpoint", endpoint)
	<-ctx.Done()
	srv.Stop()
	_ = os.Remove(socket)
	logger.Info("stopped")
	return nil
}
