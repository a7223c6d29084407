package cri

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/expansion"
)

// Volumes.
//
// emptyDir and hostPath volumes are honoured: an emptyDir is a folder
// VolumeRoot/UID/volumes/kubernetes.io~empty-dir/NAME (mode 0777, group
// fsGroup with the setgid bit when the pod sets one), kept across
// container restarts and new sandboxes, deleted with VolumeRoot/UID by
// RemovePod; a hostPath is checked against its type (and created for the
// ...OrCreate types) as the kubelet does. Both reach the runtime as CRI
// mounts with readOnly, subPath and mountPropagation.
//
// Other sources (configMap, secret, projected, downwardAPI,
// persistentVolumeClaim, …) are not mounted. A pod that mounts one in a
// container is refused, naming the volume's field: its containers would
// start without files they expect. A pod that only declares one runs, and
// the UnsupportedPodFields event names it. The projected service-account
// token volume that the API server adds to every pod (and mounts in every
// container) is the exception: it is let through unmounted and reported,
// else every pod from an API server would be refused.

const emptyDirPlugin = "kubernetes.io~empty-dir"

// podDir is VolumeRoot/UID, the folder of the pod's own files. A UID that
// is not a plain file name (it could leave VolumeRoot) has none.
func (r *Runtime) podDir(uid types.UID) (string, error) {
	s := string(uid)
	if s == "" || s == "." || s == ".." || s == trashName || strings.ContainsAny(s, "/\\\x00") {
		return "", fmt.Errorf("pod UID %q cannot name a folder under VolumeRoot", uid)
	}
	return filepath.Join(r.opts.VolumeRoot, s), nil
}

// emptyDirPath is where an emptyDir volume of the pod lives.
func (r *Runtime) emptyDirPath(uid types.UID, volume string) (string, error) {
	dir, err := r.podDir(uid)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "volumes", emptyDirPlugin, volume), nil
}

// isServiceAccountVolume reports whether v is the projected volume the API
// server's ServiceAccount admission adds to every pod (kube-api-access-*):
// a service-account token, the cluster's CA (configMap) and the namespace
// (downwardAPI).
func isServiceAccountVolume(v *v1.Volume) bool {
	p := v.Projected
	if p == nil || !strings.HasPrefix(v.Name, "kube-api-access-") {
		return false
	}
	token := false
	for _, s := range p.Sources {
		switch {
		case s.ServiceAccountToken != nil:
			token = true
		case s.ConfigMap != nil, s.DownwardAPI != nil:
		default:
			return false
		}
	}
	return token
}

// volumeSourceField names a volume's source as its field in the spec.
func volumeSourceField(s *v1.VolumeSource) string {
	switch {
	case s.EmptyDir != nil:
		return "emptyDir"
	case s.HostPath != nil:
		return "hostPath"
	case s.ConfigMap != nil:
		return "configMap"
	case s.Secret != nil:
		return "secret"
	case s.Projected != nil:
		return "projected"
	case s.DownwardAPI != nil:
		return "downwardAPI"
	case s.PersistentVolumeClaim != nil:
		return "persistentVolumeClaim"
	case s.Ephemeral != nil:
		return "ephemeral"
	case s.CSI != nil:
		return "csi"
	case s.Image != nil:
		return "image"
	case s.NFS != nil:
		return "nfs"
	}
	return "(an unsupported source)"
}

// volumeProblem says why the adapter cannot mount a volume, with the field
// that makes it so, or "" when it can.
func volumeProblem(i int, v *v1.Volume) string {
	field := fmt.Sprintf("spec.volumes[%d] (%s)", i, v.Name)
	switch {
	case v.HostPath != nil:
		return ""
	case v.EmptyDir != nil:
		if m := v.EmptyDir.Medium; m != v1.StorageMediumDefault {
			return fmt.Sprintf("%s.emptyDir.medium: %q is not supported by podlife's CRI adapter (only the default, disk)", field, m)
		}
		return ""
	}
	return fmt.Sprintf("%s.%s: not supported by podlife's CRI adapter (emptyDir and hostPath are)", field, volumeSourceField(&v.VolumeSource))
}

// mountedVolumes is the set of volume names some init or regular
// container mounts (an ephemeral container's are checked when it starts).
func mountedVolumes(pod *v1.Pod) map[string]bool {
	out := map[string]bool{}
	for _, list := range podContainerLists(pod) {
		for i := range list.cs {
			for _, m := range list.cs[i].VolumeMounts {
				out[m.Name] = true
			}
		}
	}
	return out
}

// validateVolumes refuses, naming the field, the volumes a container
// mounts but the adapter cannot mount, and the volume mounts it cannot
// honour (no such volume, a subPath that leaves the volume, subPath with
// subPathExpr, recursiveReadOnly: Enabled). A subPathExpr is checked once
// expanded, when the container is created (mountSubPath).
func validateVolumes(pod *v1.Pod) []error {
	var errs []error
	mounted := mountedVolumes(pod)
	byName := map[string]*v1.Volume{}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		byName[v.Name] = v
		if !mounted[v.Name] || isServiceAccountVolume(v) {
			continue
		}
		if p := volumeProblem(i, v); p != "" {
			errs = append(errs, fmt.Errorf("%s; a container mounts it", p))
		}
	}
	for _, list := range podContainerLists(pod) {
		for i := range list.cs {
			errs = append(errs, volumeMountErrors(byName, fmt.Sprintf("%s[%d]", list.field, i), &list.cs[i])...)
		}
	}
	return errs
}

// volumeMountErrors are validateVolumes' problems with the mounts of one
// container, whose field is path; byName are the pod's volumes.
func volumeMountErrors(byName map[string]*v1.Volume, path string, c *v1.Container) []error {
	var errs []error
	for j, m := range c.VolumeMounts {
		field := fmt.Sprintf("%s.volumeMounts[%d] (%s)", path, j, m.Name)
		switch {
		case byName[m.Name] == nil:
			errs = append(errs, fmt.Errorf("%s.name: no volume %q in spec.volumes", field, m.Name))
		case m.SubPathExpr != "" && m.SubPath != "":
			errs = append(errs, fmt.Errorf("%s.subPathExpr: subPathExpr and subPath are mutually exclusive", field))
		case filepath.IsAbs(m.SubPath) || hasDotDot(m.SubPath):
			errs = append(errs, fmt.Errorf("%s.subPath: %q must be a relative path without '..'", field, m.SubPath))
		case m.RecursiveReadOnly != nil && *m.RecursiveReadOnly == v1.RecursiveReadOnlyEnabled:
			errs = append(errs, fmt.Errorf("%s.recursiveReadOnly: Enabled is not supported by podlife's CRI adapter", field))
		}
	}
	return errs
}

func hasDotDot(p string) bool {
	for _, e := range strings.Split(filepath.ToSlash(p), "/") {
		if e == ".." {
			return true
		}
	}
	return false
}

// unmountedVolumes names, for the UnsupportedPodFields event, the volumes
// the pod declares but the adapter does not mount (validateVolumes refused
// the pod if a container mounted one), and emptyDir size limits, which are
// not enforced.
func unmountedVolumes(pod *v1.Pod) []string {
	var out []string
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case isServiceAccountVolume(v):
			out = append(out, fmt.Sprintf("spec.volumes[%d] (%s).projected: the service-account token is not mounted", i, v.Name))
		case volumeProblem(i, v) != "":
			out = append(out, volumeProblem(i, v)+"; not mounted")
		case v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil:
			out = append(out, fmt.Sprintf("spec.volumes[%d] (%s).emptyDir.sizeLimit: not enforced", i, v.Name))
		}
	}
	return out
}

// volumeMounts prepares the volumes the container mounts (an emptyDir
// folder is made, a hostPath checked or created by its type) and returns
// them as CRI mounts. The service-account token volume is skipped. env
// is the container's environment, for subPathExpr.
func (r *Runtime) volumeMounts(pod *v1.Pod, c *v1.Container, env map[string]string) ([]*runtimeapi.Mount, error) {
	return r.volumeMountsWith(pod, c, nil, env)
}

// volumeMountsWith is volumeMounts where the volumes in prepared (from a
// runtime.ContainerOptionsProvider) are bound from their prepared folder
// instead of being set up here.
func (r *Runtime) volumeMountsWith(pod *v1.Pod, c *v1.Container, prepared map[string]runtime.PreparedVolume, env map[string]string) ([]*runtimeapi.Mount, error) {
	var mounts []*runtimeapi.Mount
	for _, m := range c.VolumeMounts {
		v := findVolume(pod, m.Name)
		if v == nil {
			return nil, fmt.Errorf("volume mount %q: no such volume", m.Name) // validateVolumes refused it
		}
		pv, isPrepared := prepared[v.Name]
		if !isPrepared && isServiceAccountVolume(v) {
			continue
		}
		host, err := pv.HostPath, error(nil)
		if !isPrepared {
			host, err = r.setUpVolume(pod, v)
		}
		if err != nil {
			return nil, fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.Name, err)
		}
		sub, err := mountSubPath(m, env)
		if err != nil {
			return nil, err
		}
		if sub != "" {
			if host, err = subPath(host, sub); err != nil {
				return nil, fmt.Errorf("volume %q subPath %q: %w", v.Name, sub, err)
			}
		}
		mounts = append(mounts, &runtimeapi.Mount{
			ContainerPath: m.MountPath,
			HostPath:      host,
			Readonly:      m.ReadOnly || pv.ReadOnly,
			Propagation:   propagation(m.MountPropagation),
		})
	}
	return mounts, nil
}

// mountSubPath is the subPath of mount m: its subPath, or its
// subPathExpr with the $(VAR) references expanded against env (the
// container's environment), with the kubelet's checks and messages: a
// reference to a variable missing or empty, an absolute path and a '..'
// element are errors (the container is not created; retried at the next
// sync, as the kubelet's CreateContainerConfigError).
func mountSubPath(m v1.VolumeMount, env map[string]string) (string, error) {
	if m.SubPathExpr == "" {
		return m.SubPath, nil
	}
	missing := map[string]bool{}
	sub := expansion.Expand(m.SubPathExpr, func(name string) (string, bool) {
		v := env[name]
		if v == "" {
			missing[name] = true
		}
		return v, true
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("missing value for %s", strings.Join(slices.Sorted(maps.Keys(missing)), ", "))
	}
	if filepath.IsAbs(sub) {
		return "", fmt.Errorf("error SubPath `%s` must not be an absolute path", sub)
	}
	if hasDotDot(sub) {
		return "", fmt.Errorf("unable to provision SubPath `%s`: must not contain '..'", sub)
	}
	return sub, nil
}

func findVolume(pod *v1.Pod, name string) *v1.Volume {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}

func propagation(p *v1.MountPropagationMode) runtimeapi.MountPropagation {
	if p == nil {
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE
	}
	switch *p {
	case v1.MountPropagationHostToContainer:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
	case v1.MountPropagationBidirectional:
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL
	}
	return runtimeapi.MountPropagation_PROPAGATION_PRIVATE
}

// setUpVolume makes an emptyDir's folder or checks a hostPath, and returns
// the host path to mount.
func (r *Runtime) setUpVolume(pod *v1.Pod, v *v1.Volume) (string, error) {
	switch {
	case v.EmptyDir != nil:
		dir, err := r.emptyDirPath(pod.UID, v.Name)
		if err != nil {
			return "", err
		}
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return "", err
		}
		mode := fs.FileMode(0o777)
		if ps := pod.Spec.SecurityContext; ps != nil && ps.FSGroup != nil {
			// As the kubelet's SetVolumeOwnership: the group is fsGroup,
			// and files made in it inherit it.
			if err := os.Lchown(dir, -1, int(*ps.FSGroup)); err != nil {
				return "", fmt.Errorf("fsGroup %d: %w", *ps.FSGroup, err)
			}
			mode |= fs.ModeSetgid
		}
		// World-writable as the kubelet makes it, whatever the umask.
		return dir, os.Chmod(dir, mode)
	case v.HostPath != nil:
		return v.HostPath.Path, checkHostPath(v.HostPath)
	}
	return "", errors.New(volumeProblem(0, v)) // validateVolumes refused it
}

// subPath is the folder (or file) sub inside the volume at host, made as a
// folder with the volume's mode when missing, as the kubelet does: each
// folder it makes gets the volume folder's permission, setuid, setgid
// and sticky bits whatever the umask (an emptyDir's 0777 and, with an
// fsGroup, setgid). A subPath that resolves outside the volume (through a
// symbolic link) is refused.
func subPath(host, sub string) (string, error) {
	p := filepath.Join(host, sub)
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		fi, err := os.Stat(host)
		if err != nil {
			return "", err
		}
		mode := fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		// The folders to make, outermost first.
		var missing []string
		for d := p; d != host && d != filepath.Dir(d); d = filepath.Dir(d) {
			if _, err := os.Lstat(d); err == nil {
				break
			}
			missing = append([]string{d}, missing...)
		}
		if err := os.MkdirAll(p, mode.Perm()); err != nil {
			return "", err
		}
		for _, d := range missing {
			if err := os.Chmod(d, mode); err != nil {
				return "", err
			}
		}
	}
	root, err := filepath.EvalSymlinks(host)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	if rel, err := filepath.Rel(root, real); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("it resolves to %s, outside the volume", real)
	}
	return real, nil
}

// checkHostPath checks a hostPath against its type, with the kubelet's
// messages, creating it for DirectoryOrCreate (mode 0755) and
// FileOrCreate (0644). An unset type checks nothing.
func checkHostPath(h *v1.HostPathVolumeSource) error {
	typ := v1.HostPathUnset
	if h.Type != nil {
		typ = *h.Type
	}
	fi, err := os.Stat(h.Path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) && typ != v1.HostPathUnset {
		return fmt.Errorf("hostPath type check failed: %w", err)
	}
	is := func(ok bool, what string) error {
		if !exists || !ok {
			return fmt.Errorf("hostPath type check failed: %s is not a %s", h.Path, what)
		}
		return nil
	}
	mode := func() fs.FileMode {
		if fi == nil {
			return 0
		}
		return fi.Mode()
	}
	switch typ {
	case v1.HostPathUnset:
		return nil
	case v1.HostPathDirectoryOrCreate:
		if !exists {
			return os.MkdirAll(h.Path, 0o755)
		}
		return is(fi.IsDir(), "directory")
	case v1.HostPathDirectory:
		return is(mode().IsDir(), "directory")
	case v1.HostPathFileOrCreate:
		if !exists {
			f, err := os.OpenFile(h.Path, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}
		return is(fi.Mode().IsRegular(), "file")
	case v1.HostPathFile:
		return is(mode().IsRegular(), "file")
	case v1.HostPathSocket:
		return is(mode()&fs.ModeSocket != 0, "socket file")
	case v1.HostPathCharDev:
		return is(mode()&fs.ModeCharDevice != 0, "character device")
	case v1.HostPathBlockDev:
		return is(mode()&fs.ModeDevice != 0 && mode()&fs.ModeCharDevice == 0, "block device")
	}
	return fmt.Errorf("%s is an invalid volume type", typ)
}
