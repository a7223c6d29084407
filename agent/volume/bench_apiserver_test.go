package volume_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podlife/podlife/agent/volume"
	"github.com/podlife/podlife/test/apitest"
)

// 300 pods bound to one node, each with a ConfigMap of its own and the API
// server's service-account volume (a token, the shared kube-root-ca.crt),
// set up at once with a node's credentials at the kubelet's QPS (50/100);
// then one update of each ConfigMap must reach every pod's files. Reports
// the times. Set PODLIFE_VOLUME_PODS to change the count.
func TestSetUp300PodsAgainstAPIServer(t *testing.T) {
	api := apitest.New(t)
	if testing.Short() {
		t.Skip("-short")
	}
	n := 300
	if s := os.Getenv("PODLIFE_VOLUME_PODS"); s != "" {
		_, _ = fmt.Sscan(s, &n)
	}
	ctx := context.Background()
	const node = "vol-2"
	ns := api.Namespace(t)
	pods := make([]*v1.Pod, n)
	var mu sync.Mutex
	parallel(t, n, 20, func(i int) error {
		name := fmt.Sprintf("p%03d", i)
		if _, err := api.Admin.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v1"}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		p, err := api.Admin.CoreV1().Pods(ns).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{NodeName: node,
			Volumes:    []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: name}}}}},
			Containers: []v1.Container{{Name: "c", Image: "localhost/podlife/pause:1.0", VolumeMounts: []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}}}}}, metav1.CreateOptions{})
		mu.Lock()
		pods[i] = p
		mu.Unlock()
		return err
	})
	cfg := api.NodeConfig(t, node)
	cfg.QPS, cfg.Burst = 50, 100
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := volume.New(volume.Options{Root: t.TempDir(), Client: client})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- m.Run(runCtx) }()
	defer func() { cancel(); <-done }()

	dirs := make([]string, n)
	start := time.Now()
	parallel(t, n, n, func(i int) error {
		var last error
		for try := 0; try < 50; try++ {
			last = nil
			for j := range pods[i].Spec.Volumes {
				v := &pods[i].Spec.Volumes[j]
				pv, err := m.SetUp(ctx, pods[i], v)
				if err != nil {
					last = err
					break
				}
				if v.Name == "cfg" {
					dirs[i] = pv.HostPath
				}
			}
			if last == nil {
				return nil
			}
			time.Sleep(100 * time.Millisecond) // retry: Run may not accept watches yet
		}
		return last
	})
	t.Logf("%d pods: configMap and service-account volumes set up in %s", n, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	parallel(t, n, 20, func(i int) error {
		_, err := api.Admin.CoreV1().ConfigMaps(ns).Update(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: pods[i].Name}, Data: map[string]string{"k": "v2"}}, metav1.UpdateOptions{})
		return err
	})
	updated := time.Since(start)
	api.Eventually(t, 30*time.Second, "every update in its volume", func() (bool, error) {
		for _, d := range dirs {
			if b, _ := os.ReadFile(filepath.Join(d, "k")); strings.TrimSpace(string(b)) != "v2" {
				return false, nil
			}
		}
		return true, nil
	})
	t.Logf("%d ConfigMap updates sent in %s, all in their volumes %s after the first", n, updated.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	start = time.Now()
	for _, p := range pods {
		if err := m.TearDown(p.UID); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d pods torn down in %s", n, time.Since(start).Round(time.Millisecond))
}

// parallel runs f(0..n-1), at most width at a time, failing t on errors.
func parallel(t *testing.T, n, width int, f func(i int) error) {
	t.Helper()
	sem := make(chan struct{}, width)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := f(i); err != nil {
				errs <- fmt.Errorf("#%d: %w", i, err)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
