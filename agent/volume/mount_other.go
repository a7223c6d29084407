//go:build !linux

package volume

import "errors"

var errNoTmpfs = errors.New("tmpfs mounts are only made on Linux")

func memoryBacked(string) (bool, error) { return false, nil }
func mountTmpfs(string, int64) error    { return errNoTmpfs }
func isMountPoint(string) (bool, error) { return false, nil }
func unmount(string) error              { return nil }
