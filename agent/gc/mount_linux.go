package gc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// mountPoints lists the mount points of the process's mount namespace
// (/proc/self/mountinfo, field 5, octal escapes undone).
func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		out = append(out, unescapeMount(fields[4]))
	}
	return out, s.Err()
}

// unescapeMount undoes the kernel's \NNN octal escapes (space, tab,
// newline, backslash).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmount unmounts dir; one that is no longer mounted is fine.
func unmount(dir string) error {
	err := syscall.Unmount(dir, 0)
	if err == nil || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOENT) {
		return nil
	}
	return fmt.Errorf("unmount %s: %w", dir, err)
}

// deviceOf returns the device of the file system path is on (not
// following a symbolic link).
func deviceOf(path string) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return 0, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	return uint64(st.Dev), nil //nolint:unconvert // Dev is not uint64 everywhere
}

// Lock modes of flock.
const (
	lockShared    = syscall.LOCK_SH
	lockExclusive = syscall.LOCK_EX
	lockNone      = syscall.LOCK_UN
)

// flock applies a lock mode to f without waiting.
func flock(f *os.File, how int) error {
	if how != lockNone {
		how |= syscall.LOCK_NB
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
