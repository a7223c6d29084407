package volume

import (
	"errors"
	"fmt"
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

// mountTmpfs mounts a tmpfs on dir (mode 0755, as the kubelet's).
func mountTmpfs(dir string) error {
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// unmount unmounts dir; a dir that is no mount point is fine.
func unmount(dir string) error {
	err := syscall.Unmount(dir, 0)
	if err == nil || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOENT) {
		return nil
	}
	return fmt.Errorf("unmount %s: %w", dir, err)
}
