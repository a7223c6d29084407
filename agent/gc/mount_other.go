//go:build !linux

package gc

import (
	"os"
)

// mountPoints: no mounts are made for pods off Linux.
func mountPoints() ([]string, error) { return nil, nil }

func unmount(string) error { return nil }

// deviceOf: one file system (the walk checks nothing off Linux).
func deviceOf(path string) (uint64, error) {
	_, err := os.Lstat(path)
	return 0, err
}

const (
	lockShared = iota
	lockExclusive
	lockNone
)

// flock: no sweep off Linux (no way to know the root is this agent's
// alone).
func flock(*os.File, int) error { return errNoLocks }
