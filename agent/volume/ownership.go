package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	v1 "k8s.io/api/core/v1"
)

// Ownership is what the kubelet's SetVolumeOwnership does to a volume of
// a pod with an fsGroup: every file and folder gets group FSGroup (its
// owner is kept), files gain the group's (and owner's) read bits (and
// write bits when the volume is not ReadOnly), folders the execute bits
// too and the setgid bit, so that what is made in them inherits the
// group. Symbolic links are left alone (a chmod would reach their target).
// The zero value (no FSGroup) changes nothing.
type Ownership struct {
	// FSGroup is the pod's securityContext.fsGroup. Nil: nothing to do.
	FSGroup *int64
	// ReadOnly: the volume is read-only for the containers (configMap,
	// secret, downwardAPI, projected): the bits added are r--r-----
	// instead of rw-rw----.
	ReadOnly bool
}

// Masks the kubelet ORs into the modes it finds (volume_linux.go).
const (
	ownerGroupRW   = fs.FileMode(0o660)
	ownerGroupRO   = fs.FileMode(0o440)
	ownerGroupExec = fs.FileMode(0o110)
)

// PodOwnership is the Ownership of pod's volumes: the pod's fsGroup;
// readOnly for the volumes its containers cannot write (configMap,
// secret, downwardAPI, projected), not for an emptyDir.
// fsGroupChangePolicy is not consulted: the kubelet applies it to
// persistent volumes only, and always changes these recursively.
func PodOwnership(pod *v1.Pod, readOnly bool) Ownership {
	if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		g := *sc.FSGroup
		return Ownership{FSGroup: &g, ReadOnly: readOnly}
	}
	return Ownership{ReadOnly: readOnly}
}

// Mode is the mode that Apply gives an entry of mode m (permission,
// setgid and type bits; a folder when m.IsDir()).
func (o Ownership) Mode(m fs.FileMode) fs.FileMode {
	if o.FSGroup == nil || m&fs.ModeSymlink != 0 {
		return m
	}
	mask := ownerGroupRW
	if o.ReadOnly {
		mask = ownerGroupRO
	}
	if m.IsDir() {
		mask |= ownerGroupExec | fs.ModeSetgid
	}
	return m | mask
}

// Apply sets the ownership of root and everything under it (without
// following symbolic links), the deepest entries first, as the kubelet's
// SetVolumeOwnership. A root that does not exist is an error.
func (o Ownership) Apply(root string) error {
	if o.FSGroup == nil {
		return nil
	}
	fi, err := os.Lstat(root)
	if err != nil {
		return err
	}
	return o.apply(root, fi)
}

// applyRoot sets the ownership of folder root alone.
func (o Ownership) applyRoot(root string) error {
	if o.FSGroup == nil {
		return nil
	}
	fi, err := os.Lstat(root)
	if err != nil {
		return err
	}
	return o.applyOne(root, fi)
}

func (o Ownership) apply(p string, fi fs.FileInfo) error {
	if fi.IsDir() {
		entries, err := os.ReadDir(p)
		if err != nil {
			return err
		}
		for _, e := range entries {
			child := filepath.Join(p, e.Name())
			cfi, err := os.Lstat(child)
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed meanwhile
			}
			if err != nil {
				return err
			}
			if err := o.apply(child, cfi); err != nil {
				return err
			}
		}
	}
	return o.applyOne(p, fi)
}

// applyOne sets the group and mode of one entry (not a symbolic link).
func (o Ownership) applyOne(p string, fi fs.FileInfo) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil
	}
	if o.has(fi) {
		return nil
	}
	if err := os.Lchown(p, -1, int(*o.FSGroup)); err != nil {
		return fmt.Errorf("fsGroup %d: %w", *o.FSGroup, err)
	}
	// After the chown, which may clear a file's setuid and setgid bits.
	return os.Chmod(p, o.Mode(fi.Mode())&(fs.ModePerm|fs.ModeSetgid|fs.ModeSetuid|fs.ModeSticky))
}

// has reports whether the entry described by fi already has the group
// and mode Apply gives it.
func (o Ownership) has(fi fs.FileInfo) bool {
	if o.FSGroup == nil {
		return true
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int64(st.Gid) == *o.FSGroup && fi.Mode() == o.Mode(fi.Mode())
}

// ownedBy reports whether the entry described by fi is owned by user
// (any user when nil).
func ownedBy(fi fs.FileInfo, user *int64) bool {
	if user == nil {
		return true
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int64(st.Uid) == *user
}

// FsUser is the user every container of pod runs as (its runAsUser, else
// the pod's), or nil when they differ or one does not set it: the owner
// the kubelet gives a projected service-account token (FsUserFrom).
// Ephemeral containers are not counted.
func FsUser(pod *v1.Pod) *int64 {
	var user *int64
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			var u *int64
			if sc := list[i].SecurityContext; sc != nil && sc.RunAsUser != nil {
				u = sc.RunAsUser
			} else if psc := pod.Spec.SecurityContext; psc != nil {
				u = psc.RunAsUser
			}
			if u == nil || (user != nil && *user != *u) {
				return nil
			}
			user = u
		}
	}
	if user == nil {
		return nil
	}
	v := *user
	return &v
}
