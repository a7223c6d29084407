package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/go-logr/logr"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/agent/shutdown"
	"github.com/podlife/podlife/runtime/cri"
)

// Graceful node shutdown and the node's folders: the kubelet's
// --root-dir, podLogsDir (--pod-logs-dir), shutdownGracePeriod, shutdownGracePeriodCriticalPods (flags
// --shutdown-grace-period, --shutdown-grace-period-critical-pods, or a
// --config file) and shutdownGracePeriodByPodPriority (--config file only,
// as for the kubelet).

// kubeletConfigFields are the KubeletConfiguration fields --config reads.
var kubeletConfigFields = []string{"apiVersion", "kind", "podLogsDir", "shutdownGracePeriod", "shutdownGracePeriodCriticalPods", "shutdownGracePeriodByPodPriority"}

// addShutdownFlags registers --root-dir, --config and the shutdown flags.
func addShutdownFlags(fs *flag.FlagSet, c *config) {
	fs.StringVar(&c.rootDir, "root-dir", "", "folder of the node's files, the kubelet's --root-dir (/var/lib/kubelet): pods' folders in ROOT/pods/UID (volumes, container logs, termination messages, /etc/hosts) and the shutdown state; default: temporary folders (os.TempDir()/podlife-volumes and podlife-pod-volumes), nothing kept across reboots")
	fs.StringVar(&c.podLogsDir, "pod-logs-dir", "", "folder of the containers' logs, the kubelet's podLogsDir (/var/log/pods): DIR/NAMESPACE_NAME_UID/CONTAINER/N.log; default: in each pod's folder (ROOT/pods/UID/logs)")
	fs.StringVar(&c.configFile, "config", "", "a kubelet configuration file (KubeletConfiguration, kubelet.config.k8s.io/v1beta1) of which podLogsDir, shutdownGracePeriod, shutdownGracePeriodCriticalPods and shutdownGracePeriodByPodPriority are read (the other fields are ignored); flags given on the command line win")
	fs.DurationVar(&c.shutdownGracePeriod, "shutdown-grace-period", 0, "time a graceful node shutdown may take (SIGUSR1: pods stopped by priority, statuses written, Node not ready, then the agent exits); 0: no graceful node shutdown, SIGUSR1 is ignored. SIGINT and SIGTERM never stop pods")
	fs.DurationVar(&c.shutdownGracePeriodCriticalPods, "shutdown-grace-period-critical-pods", 0, "part of --shutdown-grace-period kept for critical pods (priority 2000000000 and above), which stop last")
}

// checkShutdownFlags reads --config, applies it under the flags given,
// and checks what results.
func checkShutdownFlags(fs *flag.FlagSet, c *config) error {
	if c.rootDir != "" {
		abs, err := filepath.Abs(c.rootDir)
		if err != nil {
			return fmt.Errorf("--root-dir %q: %w", c.rootDir, err)
		}
		c.rootDir = abs
	}
	if c.podLogsDir != "" {
		abs, err := filepath.Abs(c.podLogsDir)
		if err != nil {
			return fmt.Errorf("--pod-logs-dir %q: %w", c.podLogsDir, err)
		}
		c.podLogsDir = abs
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if c.configFile != "" {
		kc, ignored, err := readKubeletConfig(c.configFile)
		if err != nil {
			return err
		}
		c.configIgnored = ignored
		if !set["pod-logs-dir"] {
			c.podLogsDir = kc.PodLogsDir
		}
		if !set["shutdown-grace-period"] {
			c.shutdownGracePeriod = kc.ShutdownGracePeriod.Duration
		}
		if !set["shutdown-grace-period-critical-pods"] {
			c.shutdownGracePeriodCriticalPods = kc.ShutdownGracePeriodCriticalPods.Duration
		}
		for _, p := range kc.ShutdownGracePeriodByPodPriority {
			c.shutdownByPriority = append(c.shutdownByPriority, shutdown.PriorityGracePeriod{Priority: p.Priority, ShutdownGracePeriodSeconds: p.ShutdownGracePeriodSeconds})
		}
	}
	switch {
	case c.shutdownGracePeriod < 0 || c.shutdownGracePeriodCriticalPods < 0:
		return errors.New("--shutdown-grace-period and --shutdown-grace-period-critical-pods must not be negative")
	case c.shutdownGracePeriodCriticalPods > c.shutdownGracePeriod:
		return fmt.Errorf("--shutdown-grace-period-critical-pods %s must not exceed --shutdown-grace-period %s", c.shutdownGracePeriodCriticalPods, c.shutdownGracePeriod)
	case c.shutdownGracePeriod > 0 && c.shutdownGracePeriod < time.Second:
		return fmt.Errorf("--shutdown-grace-period %s: want at least 1s (whole seconds)", c.shutdownGracePeriod)
	case len(c.shutdownByPriority) > 0 && (c.shutdownGracePeriod != 0 || c.shutdownGracePeriodCriticalPods != 0):
		return errors.New("shutdownGracePeriodByPodPriority (--config) and --shutdown-grace-period / --shutdown-grace-period-critical-pods exclude each other, as in the kubelet's configuration")
	}
	return nil
}

// readKubeletConfig reads a KubeletConfiguration file, and returns it with
// the names of the fields it has that are not read.
func readKubeletConfig(path string) (kubeletconfig.KubeletConfiguration, []string, error) {
	var kc kubeletconfig.KubeletConfiguration
	data, err := os.ReadFile(path)
	if err != nil {
		return kc, nil, fmt.Errorf("--config: %w", err)
	}
	if err := yaml.UnmarshalStrict(data, &kc); err != nil {
		return kc, nil, fmt.Errorf("--config %s: %w", path, err)
	}
	if kc.APIVersion != kubeletconfig.SchemeGroupVersion.String() || kc.Kind != "KubeletConfiguration" {
		return kc, nil, fmt.Errorf("--config %s: apiVersion %q, kind %q: want %s, KubeletConfiguration", path, kc.APIVersion, kc.Kind, kubeletconfig.SchemeGroupVersion)
	}
	var fields map[string]any
	if err := yaml.Unmarshal(data, &fields); err != nil {
		return kc, nil, fmt.Errorf("--config %s: %w", path, err)
	}
	var ignored []string
	for k := range fields {
		if !slices.Contains(kubeletConfigFields, k) {
			ignored = append(ignored, k)
		}
	}
	sort.Strings(ignored)
	return kc, ignored, nil
}

// podsRoot is ROOT/pods, the pods' folders, or "" without --root-dir.
func (c config) podsRoot() string {
	if c.rootDir == "" {
		return ""
	}
	return filepath.Join(c.rootDir, "pods")
}

// runtimeRoot puts the runtime's pod folders under ROOT/pods, and the
// logs in --pod-logs-dir.
func (c config) runtimeRoot(o *cri.Options) {
	if root := c.podsRoot(); root != "" {
		o.VolumeRoot = root
	}
	o.PodLogsDir = c.podLogsDir
}

// withNodeFiles applies --root-dir and the graceful node shutdown to the
// agent's options (after withCluster).
func withNodeFiles(opts *agent.Options, c config) error {
	if c.rootDir != "" {
		if err := os.MkdirAll(c.podsRoot(), 0o750); err != nil {
			return fmt.Errorf("--root-dir: %w", err)
		}
		if opts.Cluster != nil {
			opts.Cluster.Volumes.Root = c.podsRoot()
		}
		opts.ShutdownStateFile = filepath.Join(c.rootDir, shutdown.StateFileName)
	}
	opts.ShutdownGracePeriod = c.shutdownGracePeriod
	opts.ShutdownGracePeriodCriticalPods = c.shutdownGracePeriodCriticalPods
	opts.ShutdownGracePeriodByPodPriority = c.shutdownByPriority
	return nil
}

// handleShutdownSignals shuts the node down gracefully at the first signal
// of sigs (SIGUSR1), then calls stop to end the agent; without a graceful
// node shutdown configured, it logs the signal and ignores it. It returns
// when ctx is done.
func handleShutdownSignals(ctx context.Context, sigs <-chan os.Signal, a *agent.Agent, stop func(), log logr.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-sigs:
			if a.NodeShutdown() == nil {
				log.Info("signal ignored: no graceful node shutdown configured (--shutdown-grace-period)", "signal", s.String())
				continue
			}
			log.Info("graceful node shutdown", "signal", s.String(), "budget", a.NodeShutdown().Budget())
			res, err := a.ShutdownNode(ctx)
			if err != nil {
				log.Error(err, "graceful node shutdown cut short")
			} else {
				log.Info("graceful node shutdown done; exiting", "pods", res.Pods, "stopped", res.Stopped, "failed", res.Failed, "took", res.End.Sub(res.Start).Round(time.Millisecond))
			}
			stop()
			return
		}
	}
}
