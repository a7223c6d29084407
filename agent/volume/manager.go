package volume

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/internal/podresources"
	"github.com/podlife/podlife/runtime"
)

// DefaultResyncInterval is how often every set-up volume is rewritten
// when nothing changed (tokens due for a refresh, a missed change).
const DefaultResyncInterval = time.Minute

// Options configures a Manager.
type Options struct {
	// Root is the folder of the pods' volumes:
	// Root/UID/volumes/kubernetes.io~PLUGIN/NAME. Required, absolute, and
	// visible to the container runtime at the same path.
	Root string
	// Client reads ConfigMaps and Secrets (one watch per object) and
	// requests tokens, with a node's rights. Nil: only downwardAPI
	// volumes and memory emptyDirs can be set up.
	Client kubernetes.Interface
	// Allocatable gives the node's allocatable resources (the default of
	// a limit a container does not set, in a resourceFieldRef). Nil: none.
	Allocatable func() v1.ResourceList
	// ResyncInterval: every set-up volume is rewritten at least this
	// often (tokens are refreshed then). Changes of ConfigMaps and Secrets
	// are written as soon as their watch sees them. Default 1m.
	ResyncInterval time.Duration
	// Clock. Default the real clock.
	Clock clock.WithTicker
	// Logger. The zero value discards.
	Logger logr.Logger
}

// Plugin folder names, the kubelet's.
const (
	pluginConfigMap   = "kubernetes.io~configmap"
	pluginSecret      = "kubernetes.io~secret"
	pluginDownwardAPI = "kubernetes.io~downward-api"
	pluginProjected   = "kubernetes.io~projected"
	pluginEmptyDir    = "kubernetes.io~empty-dir"
)

// Manager sets up the configMap, secret, downwardAPI and projected
// volumes of pods, and memory emptyDirs, and keeps them up to date (the
// kubelet's volume manager for these plugins). Secrets, projected volumes
// and memory emptyDirs live on a tmpfs: a memory-backed folder (Root on a
// tmpfs) or a tmpfs the Manager mounts; when neither is possible the
// volume is not set up (a secret is never written to a disk). Its
// methods are safe for concurrent use; Run must be running for volumes
// that read ConfigMaps or Secrets.
type Manager struct {
	opts    Options
	log     logr.Logger
	tokens  *Tokens
	watcher *objectWatcher
	kick    chan struct{}
	podKick chan struct{} // a pod's metadata changed (dirty)
	locks   dirLocks      // one writer per volume folder

	mu    sync.Mutex
	pods  map[types.UID]*podVolumes
	dirty map[types.UID]bool // pods whose volumes UpdatePod asked to rewrite
	// failures counts each volume's SetUp failures in a row, by pod and
	// volume name, for the retry hint of the next (SetUpError).
	failures map[types.UID]map[string]int
}

// podVolumes are the set-up volumes of one pod.
type podVolumes struct {
	pod     *v1.Pod
	volumes map[string]*v1.Volume
}

// New validates opts and returns a Manager. It starts no goroutine.
func New(opts Options) (*Manager, error) {
	if !filepath.IsAbs(opts.Root) {
		return nil, fmt.Errorf("volume: Root must be an absolute path, got %q: %w", opts.Root, runtime.ErrInvalidArgument)
	}
	if opts.ResyncInterval < 0 {
		return nil, fmt.Errorf("volume: ResyncInterval must not be negative: %w", runtime.ErrInvalidArgument)
	}
	if opts.ResyncInterval == 0 {
		opts.ResyncInterval = DefaultResyncInterval
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	m := &Manager{
		opts:    opts,
		log:     opts.Logger.WithName("volume"),
		tokens:  NewTokens(opts.Client, opts.Clock),
		kick:    make(chan struct{}, 1),
		podKick: make(chan struct{}, 1),
		pods:    map[types.UID]*podVolumes{},
		dirty:   map[types.UID]bool{},
	}
	m.watcher = &objectWatcher{client: opts.Client, onChange: m.changed, objs: map[objectKey]*watchedObject{}}
	return m, nil
}

func (m *Manager) changed() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// UpdatePod gives the Manager a new version of a pod whose volumes it
// set up (a pod it does not know is ignored). When the pod's labels or
// annotations changed, its downwardAPI and projected volumes are
// rewritten soon by Run, as the kubelet remounts them after a pod update.
// pod must not be changed afterwards.
func (m *Manager) UpdatePod(pod *v1.Pod) {
	m.mu.Lock()
	pv := m.pods[pod.UID]
	if pv == nil {
		m.mu.Unlock()
		return
	}
	old := pv.pod
	pv.pod = pod
	changed := !maps.Equal(old.Labels, pod.Labels) || !maps.Equal(old.Annotations, pod.Annotations)
	if changed {
		m.dirty[pod.UID] = true
	}
	m.mu.Unlock()
	if changed {
		select {
		case m.podKick <- struct{}{}:
		default:
		}
	}
}

// HandlesVolume reports whether the Manager sets up v: configMap,
// secret, downwardAPI, projected, and emptyDir with medium Memory.
func (m *Manager) HandlesVolume(v *v1.Volume) bool {
	switch {
	case v.ConfigMap != nil, v.Secret != nil, v.DownwardAPI != nil, v.Projected != nil:
		return true
	case v.EmptyDir != nil:
		return v.EmptyDir.Medium == v1.StorageMediumMemory
	}
	return false
}

// dir is where volume v of pod lives.
func (m *Manager) dir(uid types.UID, v *v1.Volume) (string, error) {
	s := string(uid)
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\\\x00") {
		return "", fmt.Errorf("pod UID %q cannot name a folder", uid)
	}
	var plugin string
	switch {
	case v.ConfigMap != nil:
		plugin = pluginConfigMap
	case v.Secret != nil:
		plugin = pluginSecret
	case v.DownwardAPI != nil:
		plugin = pluginDownwardAPI
	case v.Projected != nil:
		plugin = pluginProjected
	default:
		plugin = pluginEmptyDir
	}
	if err := ValidatePath(v.Name); err != nil || strings.Contains(v.Name, "/") {
		return "", fmt.Errorf("volume name %q cannot name a folder", v.Name)
	}
	return filepath.Join(m.opts.Root, s, "volumes", plugin, v.Name), nil
}

// inMemory reports whether v must live on a tmpfs.
func inMemory(v *v1.Volume) bool {
	return v.Secret != nil || v.Projected != nil || v.EmptyDir != nil
}

// SetUp makes volume v of pod ready and returns its folder, read-only
// except for an emptyDir. A ConfigMap or Secret (or key) that is missing
// and not optional is an error (the files of an earlier set-up stay); the
// volume is then kept up to date until TearDown. The Manager keeps pod
// and v to rewrite the volume later: they must not be changed afterwards
// (give a changed pod as a new object, as informers do).
func (m *Manager) SetUp(ctx context.Context, pod *v1.Pod, v *v1.Volume) (runtime.PreparedVolume, error) {
	if !m.HandlesVolume(v) {
		return runtime.PreparedVolume{}, fmt.Errorf("volume %q: not a volume the volume manager sets up", v.Name)
	}
	dir, err := m.dir(pod.UID, v)
	if err != nil {
		return runtime.PreparedVolume{}, err
	}
	unlock := m.locks.lock(dir)
	defer unlock()
	if err := m.prepareDir(dir, pod, v); err != nil {
		return runtime.PreparedVolume{}, m.failed(pod.UID, v.Name, err)
	}
	m.remember(pod, v)
	if v.EmptyDir != nil {
		// World-writable and sticky whatever the umask, as the root of
		// the kubelet's tmpfs (mounted without a mode: 1777); with an
		// fsGroup, its group and the setgid bit (the kubelet's
		// SetVolumeOwnership of a new, empty folder). A subPath folder
		// made in it gets the same bits (runtime/cri).
		if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
			return runtime.PreparedVolume{}, err
		}
		m.succeeded(pod.UID, v.Name)
		return runtime.PreparedVolume{HostPath: dir}, PodOwnership(pod, false).applyRoot(dir)
	}
	if err := m.write(ctx, pod, v, dir); err != nil {
		return runtime.PreparedVolume{}, m.failed(pod.UID, v.Name, err)
	}
	m.succeeded(pod.UID, v.Name)
	return runtime.PreparedVolume{HostPath: dir, ReadOnly: true}, nil
}

// The kubelet's back-off between the attempts of a failing volume
// operation (nestedpendingoperations): 500 ms, doubled at each failure, at
// most 2 min 2 s.
const (
	setUpRetryInitial = 500 * time.Millisecond
	setUpRetryMax     = 2*time.Minute + 2*time.Second
)

// SetUpError is a failed SetUp, with the kubelet's message. RetryAfter is
// when the kubelet's volume manager would try the volume again: 500 ms
// after its first failure in a row, doubling to at most 2 min 2 s. A pod
// worker (podworker.Options) retries its sync then rather than after its
// own, longer back-off: a token refused for a pod the Node authorizer has
// not linked to the node yet, or a ConfigMap not read yet, is tried again
// within a second, as on a kubelet.
type SetUpError struct {
	Volume string
	Err    error
	After  time.Duration
}

func (e *SetUpError) Error() string {
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", e.Volume, e.Err)
}

// Unwrap returns the cause.
func (e *SetUpError) Unwrap() error { return e.Err }

// RetryAfter returns After (the pod worker's retry hint).
func (e *SetUpError) RetryAfter() time.Duration { return e.After }

// failed counts a SetUp failure of volume name of pod uid and returns its
// SetUpError.
func (m *Manager) failed(uid types.UID, name string, err error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failures == nil {
		m.failures = map[types.UID]map[string]int{}
	}
	f := m.failures[uid]
	if f == nil {
		f = map[string]int{}
		m.failures[uid] = f
	}
	f[name]++
	after := setUpRetryInitial
	for i := 1; i < f[name] && after < setUpRetryMax; i++ {
		after *= 2
	}
	return &SetUpError{Volume: name, Err: err, After: min(after, setUpRetryMax)}
}

// succeeded ends the failures in a row of volume name of pod uid.
func (m *Manager) succeeded(uid types.UID, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f := m.failures[uid]; f != nil {
		delete(f, name)
		if len(f) == 0 {
			delete(m.failures, uid)
		}
	}
}

// remembered reports whether volume name of pod uid is set up and not
// torn down.
func (m *Manager) remembered(uid types.UID, name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	pv := m.pods[uid]
	return pv != nil && pv.volumes[name] != nil
}

// prepareDir makes dir, on a tmpfs when the volume must be in memory.
func (m *Manager) prepareDir(dir string, pod *v1.Pod, v *v1.Volume) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if !inMemory(v) {
		return nil
	}
	if v.EmptyDir != nil {
		return m.prepareMemoryEmptyDir(dir, pod, v)
	}
	mem, err := memoryBacked(dir)
	if err != nil || mem {
		return err
	}
	if err := mountTmpfs(dir, m.memorySize(pod, v)); err != nil {
		return fmt.Errorf("%s volumes are kept in memory only, and %w (run the agent as root, or put the volume root on a tmpfs)", volumeKind(v), err)
	}
	return nil
}

// prepareMemoryEmptyDir mounts a tmpfs of the kubelet's size on dir
// (memorySize), unless one is mounted there already. Where mounts
// are not allowed, a folder on a memory-backed volume root is used as it
// is, without the size limit.
func (m *Manager) prepareMemoryEmptyDir(dir string, pod *v1.Pod, v *v1.Volume) error {
	mounted, err := isMountPoint(dir)
	if err != nil || mounted {
		return err
	}
	if err := mountTmpfs(dir, m.memorySize(pod, v)); err != nil {
		if mem, merr := memoryBacked(dir); merr == nil && mem {
			return nil
		}
		return fmt.Errorf("%s volumes are kept in memory only, and %w (run the agent as root, or put the volume root on a tmpfs)", volumeKind(v), err)
	}
	return nil
}

// memorySize is the size of a volume's tmpfs, in bytes, as the kubelet's
// (calculateEmptyDirMemorySize, for memory emptyDirs and the tmpfs of
// secret and projected volumes): the node's allocatable memory, or the
// pod's memory limit when it has one and it is smaller, or an emptyDir's
// sizeLimit when it is set and smaller still. 0 (the kernel's default)
// when none is known.
func (m *Manager) memorySize(pod *v1.Pod, v *v1.Volume) int64 {
	var size int64
	if m.opts.Allocatable != nil {
		if q, ok := m.opts.Allocatable()[v1.ResourceMemory]; ok {
			size = q.Value()
		}
	}
	smaller := func(n int64) {
		if n > 0 && (size == 0 || n <= size) {
			size = n
		}
	}
	smaller(podMemoryLimit(pod))
	if v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil {
		smaller(v.EmptyDir.SizeLimit.Value())
	}
	return size
}

// podMemoryLimit is the pod's memory limit as the kubelet sets its cgroup:
// the sum of its regular containers' (and sidecars') limits, or the largest
// init container's when that is more; 0 when a container has none.
func podMemoryLimit(pod *v1.Pod) int64 {
	total, all, _ := podresources.Sum(pod, func(c *v1.Container) (int64, bool) {
		q, ok := c.Resources.Limits[v1.ResourceMemory]
		return q.Value(), ok && !q.IsZero() // a zero limit is no limit here
	})
	if !all {
		return 0
	}
	return total
}

func volumeKind(v *v1.Volume) string {
	switch {
	case v.Secret != nil:
		return "secret"
	case v.Projected != nil:
		return "projected"
	}
	return "memory emptyDir"
}

func (m *Manager) remember(pod *v1.Pod, v *v1.Volume) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pv := m.pods[pod.UID]
	if pv == nil {
		pv = &podVolumes{volumes: map[string]*v1.Volume{}}
		m.pods[pod.UID] = pv
	}
	pv.pod = pod
	pv.volumes[v.Name] = v
}

// write computes the volume's payload and writes it atomically.
func (m *Manager) write(ctx context.Context, pod *v1.Pod, v *v1.Volume, dir string) error {
	payload, err := m.payload(ctx, pod, v)
	if err != nil {
		return err
	}
	changed, err := WriteAtomicOwned(dir, payload, m.opts.Clock.Now(), PodOwnership(pod, true))
	if changed && err == nil {
		m.log.V(4).Info("volume written", "pod", pod.Namespace+"/"+pod.Name, "volume", v.Name, "files", len(payload))
	}
	return err
}

// TearDown unmounts and removes every volume of the pod
// (Root/UID/volumes/*/*), and the pod's folder once nothing else is in it,
// stops the watches only it used and forgets its tokens.
func (m *Manager) TearDown(uid types.UID) error {
	m.mu.Lock()
	delete(m.pods, uid)
	delete(m.dirty, uid)
	delete(m.failures, uid)
	m.mu.Unlock()
	if s := string(uid); s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\\\x00") {
		return fmt.Errorf("pod UID %q cannot name a folder", uid)
	}
	podDir := filepath.Join(m.opts.Root, string(uid))
	plugins, _ := filepath.Glob(filepath.Join(podDir, "volumes", "*", "*"))
	// Wait for the writers already in a volume (a resync): the next ones
	// find the pod forgotten and write nothing, nor watch anything more.
	for _, d := range plugins {
		m.locks.lock(d)()
	}
	m.watcher.release(uid)
	m.tokens.Forget(uid)
	var errs []error
	for _, d := range plugins {
		errs = append(errs, unmount(d))
	}
	if err := errors.Join(errs...); err != nil {
		return err // never remove what is still mounted
	}
	// Only the volumes: the pod's folder may be shared with the runtime
	// (its logs, termination messages and /etc/hosts under the same root,
	// as under the kubelet's ROOT/pods/UID), which removes what is its own.
	for _, d := range plugins {
		errs = append(errs, os.RemoveAll(d))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	kinds, _ := filepath.Glob(filepath.Join(podDir, "volumes", "*"))
	for _, d := range append(kinds, filepath.Join(podDir, "volumes"), podDir) {
		removeIfEmpty(d)
	}
	return nil
}

// removeIfEmpty removes the folder dir when it is empty; a folder that is
// not, or is gone, is left as it is.
func removeIfEmpty(dir string) {
	_ = os.Remove(dir) // fails, harmlessly, on a folder that is not empty
}

// Root returns Options.Root, the folder of the pods' volume folders
// (Root/UID), for the sweep of orphaned pod folders (agent/gc).
func (m *Manager) Root() string { return m.opts.Root }

// Run keeps the set-up volumes up to date until ctx ends: at once when a
// watched ConfigMap or Secret changes, and every ResyncInterval. It then
// stops every watch and returns once they have ended.
func (m *Manager) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	m.watcher.mu.Lock()
	m.watcher.ctx, m.watcher.wg = ctx, &wg
	m.watcher.mu.Unlock()
	defer func() {
		m.watcher.mu.Lock()
		m.watcher.ctx = nil
		for key, o := range m.watcher.objs {
			o.cancel()
			delete(m.watcher.objs, key)
		}
		m.watcher.mu.Unlock()
		wg.Wait()
	}()
	t := m.opts.Clock.NewTicker(m.opts.ResyncInterval)
	defer t.Stop()
	for {
		all := true
		select {
		case <-ctx.Done():
			return nil
		case <-m.kick:
		case <-t.C():
		case <-m.podKick:
			all = false
		}
		m.resync(ctx, all)
	}
}

// resync rewrites the set-up volumes whose content changed: all of them
// when all, else those of the pods UpdatePod marked. A volume whose data
// cannot be read keeps its files.
func (m *Manager) resync(ctx context.Context, all bool) {
	type item struct {
		pod *v1.Pod
		v   *v1.Volume
	}
	var items []item
	m.mu.Lock()
	for uid, pv := range m.pods {
		if !all && !m.dirty[uid] {
			continue
		}
		for _, v := range pv.volumes {
			if v.EmptyDir == nil && (all || v.DownwardAPI != nil || v.Projected != nil) {
				items = append(items, item{pv.pod, v})
			}
		}
	}
	clear(m.dirty)
	m.mu.Unlock()
	for _, it := range items {
		dir, err := m.dir(it.pod.UID, it.v)
		if err == nil {
			unlock := m.locks.lock(dir)
			if m.remembered(it.pod.UID, it.v.Name) { // not torn down meanwhile
				err = m.write(ctx, it.pod, it.v, dir)
			}
			unlock()
		}
		if err != nil {
			m.log.Info("volume not updated; its files are kept", "pod", it.pod.Namespace+"/"+it.pod.Name, "volume", it.v.Name, "err", err)
		}
	}
}
