package eviction

import (
	"io/fs"
	"syscall"
)

// allocated is the space the file takes on disk (its blocks).
func allocated(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Blocks >= 0 {
		return uint64(st.Blocks) * 512
	}
	return uint64(max(info.Size(), 0))
}
