package eviction

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"
)

// The layout LocalStorage measures, runtime/cri's (and the kubelet's under
// its pods folder).
const (
	emptyDirPlugin = "kubernetes.io~empty-dir"
)

// LocalStorage is a PodStatsProvider that adds to another's the disk
// usage of what the pods keep on the node: each emptyDir volume
// (PodsDir/UID/volumes/kubernetes.io~empty-dir/NAME) as a VolumeStats
// entry, each container's logs (PodsDir/UID/logs/NAME) as its Logs, and
// their sum plus the containers' writable layers (when the inner
// provider gives them) as the pod's EphemeralStorage. Usage is the
// space of the files' blocks and their count of inodes, as du measures.
type LocalStorage struct {
	// Stats gives the pods' other figures (memory, processes, writable
	// layers): *cri.Runtime. Required.
	Stats PodStatsProvider
	// PodsDir is the folder of the pods' folders (runtime/cri's
	// VolumeRoot). Required.
	PodsDir string
	// Clock stamps the figures. Default: the real clock.
	Clock clock.PassiveClock
}

var _ PodStatsProvider = (*LocalStorage)(nil)

// ListPodStats returns the inner provider's stats with the disk usage
// added. A pod folder that cannot be read adds nothing.
func (l *LocalStorage) ListPodStats(ctx context.Context) ([]statsapi.PodStats, error) {
	list, err := l.Stats.ListPodStats(ctx)
	if err != nil {
		return nil, err
	}
	var c clock.PassiveClock = clock.RealClock{}
	if l.Clock != nil {
		c = l.Clock
	}
	now := metav1.NewTime(c.Now())
	for i := range list {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		ps := &list[i]
		uid := ps.PodRef.UID
		if uid == "" || uid == "." || uid == ".." || filepath.Base(uid) != uid {
			continue
		}
		dir := filepath.Join(l.PodsDir, uid)
		if _, err := os.Lstat(dir); err != nil {
			continue
		}
		var total, totalInodes uint64
		volumes, _ := os.ReadDir(filepath.Join(dir, "volumes", emptyDirPlugin))
		for _, v := range volumes {
			if !v.IsDir() {
				continue
			}
			bytes, inodes := usage(filepath.Join(dir, "volumes", emptyDirPlugin, v.Name()))
			total, totalInodes = total+bytes, totalInodes+inodes
			ps.VolumeStats = setVolume(ps.VolumeStats, v.Name(), usedFs(now, bytes, inodes))
		}
		for j := range ps.Containers {
			cs := &ps.Containers[j]
			if filepath.Base(cs.Name) != cs.Name {
				continue
			}
			ldir := filepath.Join(dir, "logs", cs.Name)
			if _, err := os.Lstat(ldir); err == nil {
				bytes, inodes := usage(ldir)
				cs.Logs = usedFs(now, bytes, inodes)
			}
			if cs.Logs != nil {
				total += deref(cs.Logs.UsedBytes)
				totalInodes += deref(cs.Logs.InodesUsed)
			}
			if cs.Rootfs != nil {
				total += deref(cs.Rootfs.UsedBytes)
				totalInodes += deref(cs.Rootfs.InodesUsed)
			}
		}
		ps.EphemeralStorage = usedFs(now, total, totalInodes)
	}
	return list, nil
}

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

func usedFs(now metav1.Time, bytes, inodes uint64) *statsapi.FsStats {
	return &statsapi.FsStats{Time: now, UsedBytes: &bytes, InodesUsed: &inodes}
}

func setVolume(vs []statsapi.VolumeStats, name string, fs *statsapi.FsStats) []statsapi.VolumeStats {
	for i := range vs {
		if vs[i].Name == name {
			vs[i].FsStats = *fs
			return vs
		}
	}
	return append(vs, statsapi.VolumeStats{Name: name, FsStats: *fs})
}

// usage walks dir and sums its files' allocated space and inodes (dir
// included). What cannot be read is skipped; symlinks are not followed.
func usage(dir string) (bytes, inodes uint64) {
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		inodes++
		bytes += allocated(info)
		return nil
	})
	return bytes, inodes
}
