package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterVolumes says which volumes each pod of a ClusterWorkload mounts.
type ClusterVolumes int

const (
	// VolumesNone: no volume at all. The pods set
	// automountServiceAccountToken: false, so that the ServiceAccount
	// admission adds no token volume either.
	VolumesNone ClusterVolumes = iota
	// VolumesToken: only the projected service-account token volume
	// (kube-api-access-*: a token, the kube-root-ca.crt ConfigMap's
	// ca.crt and the namespace) that the ServiceAccount admission adds
	// when automountServiceAccountToken is not false. This is what the
	// pods of the workload had before VolumesNone made them plain.
	VolumesToken
	// VolumesPerPod: each pod mounts a ConfigMap and a Secret of its own
	// (named after the pod, created by the workload before the clock
	// starts) and the token volume: one TokenRequest, one ConfigMap and
	// one Secret per pod, the kube-root-ca.crt ConfigMap shared by all.
	VolumesPerPod
	// VolumesShared: every pod mounts the same ConfigMap and Secret
	// ("bench-shared") and its own token volume.
	VolumesShared
)

var clusterVolumesNames = [...]string{"none", "token", "per-pod", "shared"}

func (v ClusterVolumes) String() string {
	if v < 0 || int(v) >= len(clusterVolumesNames) {
		return fmt.Sprintf("ClusterVolumes(%d)", int(v))
	}
	return clusterVolumesNames[v]
}

// ParseClusterVolumes is the inverse of String.
func ParseClusterVolumes(s string) (ClusterVolumes, error) {
	for i, n := range clusterVolumesNames {
		if s == n {
			return ClusterVolumes(i), nil
		}
	}
	return 0, fmt.Errorf("volumes %q: want one of %s", s, strings.Join(clusterVolumesNames[:], ", "))
}

// token reports whether the pods get the admission's token volume.
func (v ClusterVolumes) token() bool { return v != VolumesNone }

// objects reports whether the pods mount a ConfigMap and a Secret.
func (v ClusterVolumes) objects() bool { return v == VolumesPerPod || v == VolumesShared }

// sharedObjectName names the ConfigMap and the Secret of VolumesShared.
const sharedObjectName = "bench-shared"

// TokenVolumePrefix starts the name of the projected volume that the
// ServiceAccount admission adds (kube-api-access-XXXXX).
const TokenVolumePrefix = "kube-api-access-"

// objectName is the ConfigMap and Secret that pod name mounts.
func (v ClusterVolumes) objectName(pod string) string {
	if v == VolumesShared {
		return sharedObjectName
	}
	return pod
}

// objectNames are the ConfigMaps (and Secrets, of the same names) the
// workload creates for pods.
func (v ClusterVolumes) objectNames(pods []string) []string {
	switch v {
	case VolumesShared:
		return []string{sharedObjectName}
	case VolumesPerPod:
		return pods
	}
	return nil
}

// clusterPod is the workload's pod: one container that hangs, bound to
// node, with the volumes vols asks for.
func clusterPod(name, node, image string, grace int64, vols ClusterVolumes) *v1.Pod {
	automount := vols.token()
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{
			NodeName:                      node,
			RestartPolicy:                 v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &automount,
			Containers: []v1.Container{{
				Name:            "c",
				Image:           image,
				ImagePullPolicy: v1.PullIfNotPresent,
				Args:            []string{"hang"},
			}},
		},
	}
	if vols.objects() {
		obj := vols.objectName(name)
		p.Spec.Volumes = []v1.Volume{
			{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: obj}}}},
			{Name: "secret", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: obj}}},
		}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
			{Name: "config", MountPath: "/etc/bench/config", ReadOnly: true},
			{Name: "secret", MountPath: "/etc/bench/secret", ReadOnly: true},
		}
	}
	return p
}

// clusterObjects are the ConfigMap and the Secret called name.
func clusterObjects(name string) (*v1.ConfigMap, *v1.Secret) {
	return &v1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Data:       map[string]string{"app.properties": "name=" + name + "\nlevel=info\n"},
		}, &v1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Type:       v1.SecretTypeOpaque,
			Data:       map[string][]byte{"password": []byte("secret-of-" + name)},
		}
}

// hasTokenVolume reports whether the admission gave p its token volume.
func hasTokenVolume(p *v1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if strings.HasPrefix(v.Name, TokenVolumePrefix) && v.Projected != nil {
			return true
		}
	}
	return false
}

// prepareNamespace makes what the pods of ns need before the clock
// starts: the ServiceAccount default (the admission refuses pods until
// the controller-manager made it), the kube-root-ca.crt ConfigMap (the
// token volume's ca.crt; its publisher makes it) when the pods get a
// token volume, and the ConfigMaps and Secrets they mount.
func (w *ClusterWorkload) prepareNamespace(ctx context.Context, ns string, pods []string) error {
	if err := waitFor(ctx, time.Minute, func(ctx context.Context) error {
		_, err := w.Admin.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("service account %s/default: %w", ns, err)
	}
	if w.Volumes.token() {
		if err := waitFor(ctx, time.Minute, func(ctx context.Context) error {
			_, err := w.Admin.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("configmap %s/kube-root-ca.crt: %w", ns, err)
		}
	}
	names := w.Volumes.objectNames(pods)
	if len(names) == 0 {
		return nil
	}
	start := time.Now()
	if err := w.parallel(ctx, names, func(ctx context.Context, name string) error {
		cm, sec := clusterObjects(name)
		if _, err := w.Admin.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return err
		}
		_, err := w.Admin.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("create configmaps and secrets: %w", err)
	}
	w.Logf("%d configmaps and %d secrets created in %v (before the clock)", len(names), len(names), time.Since(start).Round(time.Millisecond))
	return nil
}

// waitFor calls f every 200 ms until it succeeds, a NotFound error
// being the only one retried, or d passed.
func waitFor(ctx context.Context, d time.Duration, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		err := f(ctx)
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// VolumeRequests are the requests of an engine for volumes, from the
// counting proxy's "verb resource" counts.
type VolumeRequests struct {
	// Tokens are TokenRequests (create serviceaccounts/token).
	Tokens int
	// ConfigMaps and Secrets are reads, by verb.
	ConfigMaps, Secrets ObjectReads
}

// ObjectReads counts the reads of one resource by verb.
type ObjectReads struct{ Get, List, Watch int }

// Total is the sum.
func (r ObjectReads) Total() int { return r.Get + r.List + r.Watch }

// CountVolumeRequests picks the volume requests out of counts by
// "verb resource" (CountingProxy.Snapshot, Diff).
func CountVolumeRequests(counts map[string]int) VolumeRequests {
	var r VolumeRequests
	for k, n := range counts {
		verb, res, ok := strings.Cut(k, " ")
		if !ok {
			continue
		}
		var reads *ObjectReads
		switch res {
		case "serviceaccounts/token":
			if verb == "create" {
				r.Tokens += n
			}
			continue
		case "configmaps":
			reads = &r.ConfigMaps
		case "secrets":
			reads = &r.Secrets
		default:
			continue
		}
		switch verb {
		case "get":
			reads.Get += n
		case "list":
			reads.List += n
		case "watch":
			reads.Watch += n
		}
	}
	return r
}
