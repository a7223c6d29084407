package cri

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// podVolumeDir is where a pod's emptyDir volumes live:
// VolumeRoot/UID/volumes/kubernetes.io~empty-dir/NAME, as the kubelet lays
// them out under its root directory.
// A UID that is not a plain file name (it could escape VolumeRoot) has none.
func (r *Runtime) podVolumeDir(uid types.UID) (string, bool) {
	s := string(uid)
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, `/\`) {
		return "", false
	}
	return filepath.Join(r.opts.VolumeRoot, s), true
}

// volumeMounts prepares the volumes a container mounts (an emptyDir folder
// is created; a hostPath is checked against its type, created for the
// ...OrCreate types) and returns them as CRI mounts.
func (r *Runtime) volumeMounts(pod *v1.Pod, c *v1.Container) ([]*runtimeapi.Mount, error) {
	var mounts []*runtimeapi.Mount
	for _, m := range c.VolumeMounts {
		vol := findVolume(pod, m.Name)
		if vol == nil {
			return nil, fmt.Errorf("volume mount %q: no such volume", m.Name)
		}
		if isServiceAccountVolume(vol) {
			continue // not mounted: see isServiceAccountVolume
		}
		host, err := r.prepareVolume(pod, vol)
		if err != nil {
			return nil, fmt.Errorf("volume %q: %w", vol.Name, err)
		}
		if m.SubPath != "" {
			host = filepath.Join(host, m.SubPath)
			if vol.EmptyDir != nil {
				if err := os.MkdirAll(host, 0o777); err != nil {
					return nil, fmt.Errorf("volume %q subPath %q: %w", vol.Name, m.SubPath, err)
				}
			}
		}
		mounts = append(mounts, &runtimeapi.Mount{
			ContainerPath: m.MountPath,
			HostPath:      host,
			Readonly:      m.ReadOnly,
			Propagation:   propagation(m.MountPropagation),
		})
	}
	return mounts, nil
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
	switch {
	case p == nil:
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE
	case *p == v1.MountPropagationHostToContainer:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
	case *p == v1.MountPropagationBidirectional:
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL
	default:
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE
	}
}

func (r *Runtime) prepareVolume(pod *v1.Pod, vol *v1.Volume) (string, error) {
	switch {
	case vol.EmptyDir != nil:
		root, ok := r.podVolumeDir(pod.UID)
		if !ok {
			return "", fmt.Errorf("pod UID %q cannot name a folder", pod.UID)
		}
		dir := filepath.Join(root, "volumes", "kubernetes.io~empty-dir", vol.Name)
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return "", err
		}
		// World-writable as the kubelet makes it, whatever the umask.
		return dir, os.Chmod(dir, 0o777)
	case vol.HostPath != nil:
		return vol.HostPath.Path, checkHostPath(vol.HostPath)
	default:
		return "", fmt.Errorf("%s volumes are not supported", volumeKind(&vol.VolumeSource))
	}
}

// checkHostPath checks (or creates) a hostPath by its type, as the kubelet.
func checkHostPath(h *v1.HostPathVolumeSource) error {
	typ := v1.HostPathUnset
	if h.Type != nil {
		typ = *h.Type
	}
	fi, err := os.Stat(h.Path)
	missing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !missing {
		return err
	}
	want := func(ok bool, what string) error {
		if missing {
			return fmt.Errorf("hostPath type check failed: %s does not exist", h.Path)
		}
		if !ok {
			return fmt.Errorf("hostPath type check failed: %s is not a %s", h.Path, what)
		}
		return nil
	}
	switch typ {
	case v1.HostPathUnset:
		return nil
	case v1.HostPathDirectoryOrCreate:
		if missing {
			return os.MkdirAll(h.Path, 0o755)
		}
		return want(fi.IsDir(), "directory")
	case v1.HostPathDirectory:
		return want(!missing && fi.IsDir(), "directory")
	case v1.HostPathFileOrCreate:
		if missing {
			f, err := os.OpenFile(h.Path, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}
		return want(fi.Mode().IsRegular(), "file")
	case v1.HostPathFile:
		return want(!missing && fi.Mode().IsRegular(), "file")
	case v1.HostPathSocket:
		return want(!missing && fi.Mode()&fs.ModeSocket != 0, "socket")
	case v1.HostPathCharDev:
		return want(!missing && fi.Mode()&fs.ModeCharDevice != 0, "character device")
	case v1.HostPathBlockDev:
		return want(!missing && fi.Mode()&fs.ModeDevice != 0 && fi.Mode()&fs.ModeCharDevice == 0, "block device")
	default:
		return fmt.Errorf("unknown hostPath type %q", typ)
	}
}

// volumeProblems names what the adapter cannot honour of the pod's volumes
// and mounts; nil when everything can be mounted.
func volumeProblems(pod *v1.Pod) []string {
	var out []string
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		switch {
		case isServiceAccountVolume(vol), vol.HostPath != nil:
		case vol.EmptyDir != nil:
			if vol.EmptyDir.Medium != v1.StorageMediumDefault {
				out = append(out, fmt.Sprintf("spec.volumes[%d].emptyDir.medium", i))
			}
		default:
			out = append(out, fmt.Sprintf("spec.volumes[%d].%s", i, volumeKind(&vol.VolumeSource)))
		}
	}
	check := func(field string, c *v1.Container) {
		for j, m := range c.VolumeMounts {
			f := fmt.Sprintf("%s.volumeMounts[%d]", field, j)
			switch {
			case findVolume(pod, m.Name) == nil:
				out = append(out, f+".name (no such volume)")
			case m.SubPathExpr != "":
				out = append(out, f+".subPathExpr")
			case filepath.IsAbs(m.SubPath) || strings.Contains(m.SubPath, ".."):
				out = append(out, f+".subPath (absolute or with ..)")
			case m.RecursiveReadOnly != nil && *m.RecursiveReadOnly == v1.RecursiveReadOnlyEnabled:
				out = append(out, f+".recursiveReadOnly")
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		check(fmt.Sprintf("spec.initContainers[%d]", i), &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		check(fmt.Sprintf("spec.containers[%d]", i), &pod.Spec.Containers[i])
	}
	return out
}
