package imagegc

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/podlife/podlife/runtime"
)

// FsStats describe the image file system as garbage collection reads it.
type FsStats struct {
	// Mountpoint names the file system in messages; may be empty.
	Mountpoint string
	// CapacityBytes is the file system's size, AvailableBytes what is free
	// for use (both as statfs gives them).
	CapacityBytes  uint64
	AvailableBytes uint64
	// UsedBytes is what the images take (informational: the decision
	// rests on capacity and availability, as the kubelet's).
	UsedBytes uint64
}

// StatsFunc reads the image file system's stats. An error wrapping
// ErrUnsupported turns the periodic collection off (said once) until it
// answers again.
type StatsFunc func(ctx context.Context) (FsStats, error)

// ErrUnsupported: the runtime cannot tell the usage of its image file
// system (CRI ImageFsInfo unimplemented or empty).
var ErrUnsupported = errors.New("image file system stats unsupported")

// CRIStats returns the kubelet's way of reading the image file system:
// the runtime's ImageFsInfo gives its mount point and the images' usage,
// statfs of the mount point its capacity and availability.
func CRIStats(rt FsInfoRuntime) StatsFunc {
	return func(ctx context.Context) (FsStats, error) {
		u, err := rt.ImageFsInfo(ctx)
		if errors.Is(err, runtime.ErrUnimplemented) || errors.Is(err, runtime.ErrNotFound) {
			return FsStats{}, fmt.Errorf("%w: %w", ErrUnsupported, err)
		}
		if err != nil {
			return FsStats{}, err
		}
		if u.Mountpoint == "" {
			return FsStats{}, fmt.Errorf("%w: the runtime names no mount point of its image file system", ErrUnsupported)
		}
		var st syscall.Statfs_t
		if err := syscall.Statfs(u.Mountpoint, &st); err != nil {
			return FsStats{}, fmt.Errorf("statfs of the image file system %s: %w", u.Mountpoint, err)
		}
		bs := uint64(st.Bsize)
		return FsStats{
			Mountpoint:     u.Mountpoint,
			CapacityBytes:  st.Blocks * bs,
			AvailableBytes: st.Bavail * bs,
			UsedBytes:      u.UsedBytes,
		}, nil
	}
}
