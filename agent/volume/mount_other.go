//go:build !linux

package volume

import "errors"

var errNoTmpfs = errors.New("tmpfs mounts are only made on Linux")

func memoryBacked(string) (bool, error) { return false, nil }
func mountTmpfs(string) error           { return errNoTmpfs }
func unmount(string) error              { return nil }
