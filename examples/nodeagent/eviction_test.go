package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

func thresholdStrings(c config) string {
	var s []string
	for _, t := range c.eviction.Thresholds {
		x := t.String()
		if t.GracePeriod > 0 {
			x += " after " + t.GracePeriod.String()
		}
		if t.MinReclaim != nil {
			x += " +" + t.MinReclaim.String()
		}
		s = append(s, x)
	}
	return strings.Join(s, ", ")
}

func TestEvictionFlags(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := thresholdStrings(c), "memory.available<100Mi, nodefs.available<10%, nodefs.inodesFree<5%, imagefs.available<15%, imagefs.inodesFree<5%"; got != want {
		t.Errorf("defaults %q, want %q", got, want)
	}
	if c.eviction.PressureTransitionPeriod != 5*time.Minute || c.eviction.MaxPodGracePeriodSeconds != 0 {
		t.Errorf("defaults %+v", c.eviction)
	}
	c, err = parseFlags([]string{
		"--eviction-hard", "memory.available<500Mi,nodefs.available<5%",
		"--eviction-soft", "memory.available<1Gi", "--eviction-soft-grace-period", "memory.available=1m30s",
		"--eviction-minimum-reclaim", "nodefs.available=1Gi",
		"--eviction-pressure-transition-period", "30s", "--eviction-max-pod-grace-period", "60",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := thresholdStrings(c), "memory.available<500Mi, nodefs.available<5% +1Gi, memory.available<1Gi after 1m30s"; got != want {
		t.Errorf("got %q, want %q (the given hard thresholds replace the defaults)", got, want)
	}
	if c.eviction.PressureTransitionPeriod != 30*time.Second || c.eviction.MaxPodGracePeriodSeconds != 60 {
		t.Errorf("options %+v", c.eviction)
	}
	if c, err = parseFlags([]string{"--eviction-hard", ""}, io.Discard); err != nil || c.eviction.Thresholds == nil || len(c.eviction.Thresholds) != 0 {
		t.Errorf("--eviction-hard '': %v, %v; want no threshold (not the defaults)", c.eviction, err)
	}
	for _, bad := range [][]string{
		{"--eviction-hard", "memory.free<1Gi"},
		{"--eviction-hard", "memory.available=1Gi"},
		{"--eviction-soft", "memory.available<1Gi"},
		{"--eviction-soft-grace-period", "memory.available=-1s", "--eviction-soft", "memory.available<1Gi"},
		{"--eviction-max-pod-grace-period", "-1"},
		{"--eviction-pressure-transition-period", "-1s"},
	} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
