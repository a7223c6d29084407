package fleet

import "syscall"

// memoryBacked reports whether dir is on a tmpfs.
func memoryBacked(dir string) bool {
	var st syscall.Statfs_t
	return syscall.Statfs(dir, &st) == nil && st.Type == 0x01021994 // TMPFS_MAGIC
}
