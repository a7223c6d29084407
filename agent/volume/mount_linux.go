package volume

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
)

// tmpfsMagic is the file-system type of a tmpfs (statfs).
const tmpfsMagic = 0x01021994

// memoryBacked reports whether dir is on a tmpfs.
func memoryBacked(dir string) (bool, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false, err
	}
	return st.Type == tmpfsMagic, nil
}

// mountTmpfs mounts a tmpfs on dir (mode 0755, as the kubelet's), of size
// bytes when size is positive (else the kernel's default, half the RAM).
func mountTmpfs(dir string, size int64) error {
	opts := "mode=0755"
	if size > 0 {
		opts += fmt.Sprintf(",size=%d", size)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// isMountPoint reports whether dir is the root of a mount: on another
// device than its parent folder.
func isMountPoint(dir string) (bool, error) {
	var st, parent syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return false, err
	}
	if err := syscall.Stat(filepath.Dir(filepath.Clean(dir)), &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev, nil
}

// unmount unmounts dir; a dir that is no mount point is fine.
func unmount(dir string) error {
	err := syscall.Unmount(dir, 0)
	if err == nil || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOENT) {
		return nil
	}
	return fmt.Errorf("unmount %s: %w", dir, err)
}
