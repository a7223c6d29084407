package envvars_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podlife/podlife/agent/envvars"
	"github.com/podlife/podlife/runtime"
)

// The service variables of many pods cost one list and one watch of the
// Services, not a list per pod; a Service created later reaches the pods
// that start after it; before its first list the reader answers the
// kubelet's error, which the container start retries.
func TestWatchingReaderServices(t *testing.T) {
	client := fake.NewClientset(
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}},
			Spec: v1.ServiceSpec{ClusterIP: "10.0.0.1", Ports: []v1.ServicePort{{Name: "https", Port: 443}}}},
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db"},
			Spec: v1.ServiceSpec{ClusterIP: "10.0.0.5", Ports: []v1.ServicePort{{Port: 5432}}}},
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "cache"},
			Spec: v1.ServiceSpec{ClusterIP: "10.0.0.6", Ports: []v1.ServicePort{{Port: 6379}}}},
	)
	var mu sync.Mutex
	verbs := map[string]int{}
	client.PrependReactor("*", "services", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		verbs[a.GetVerb()]++
		return false, nil, nil
	})
	client.PrependWatchReactor("services", func(a k8stesting.Action) (bool, watch.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		verbs["watch"]++
		return false, nil, nil
	})
	reader, err := envvars.NewWatchingReader(client)
	if err != nil {
		t.Fatal(err)
	}
	res := envvars.New(envvars.Options{Reader: reader})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pod := func(i int) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: fmt.Sprintf("p%d", i), UID: types.UID(fmt.Sprint(i))},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	}
	names := func(env []envvars.EnvVar) []string {
		var out []string
		for _, e := range env {
			out = append(out, e.Name)
		}
		return out
	}

	// Before the first list: the kubelet's error, a ConfigError (retried).
	_, err = res.Env(ctx, pod(0), &pod(0).Spec.Containers[0], nil)
	if !errors.Is(err, envvars.ErrServicesNotSynced) || !errors.Is(err, runtime.ErrFailedPrecondition) {
		t.Fatalf("Env before the first list: %v", err)
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- reader.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	for !reader.HasSynced() {
		select {
		case <-ctx.Done():
			t.Fatal("the Services were never listed")
		case <-time.After(10 * time.Millisecond):
		}
	}
	for i := range 20 {
		p := pod(i)
		env, err := res.Env(ctx, p, &p.Spec.Containers[0], nil)
		if err != nil {
			t.Fatal(err)
		}
		got := names(env)
		if !slices.Contains(got, "KUBERNETES_SERVICE_HOST") || !slices.Contains(got, "DB_SERVICE_HOST") || slices.Contains(got, "CACHE_SERVICE_HOST") {
			t.Fatalf("pod %d: variables %v", i, got)
		}
	}
	mu.Lock()
	if verbs["list"] != 1 || verbs["watch"] != 1 {
		t.Errorf("requests for 20 pods: %v, want 1 list and 1 watch", verbs)
	}
	mu.Unlock()
	if svcs, err := reader.Services(ctx, "default"); err != nil || len(svcs) != 1 || svcs[0].ManagedFields != nil {
		t.Errorf("stored Services keep their managed fields or are missing: %v, %v", svcs, err)
	}

	// A new Service reaches the pods started after it.
	if _, err := client.CoreV1().Services("app").Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "queue"},
		Spec: v1.ServiceSpec{ClusterIP: "10.0.0.7", Ports: []v1.ServicePort{{Port: 5672}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		p := pod(99)
		env, err := res.Env(ctx, p, &p.Spec.Containers[0], nil)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(names(env), "QUEUE_SERVICE_HOST") {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the new Service never reached a pod")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestNewWatchingReaderNeedsAClient(t *testing.T) {
	if _, err := envvars.NewWatchingReader(nil); err == nil {
		t.Error("NewWatchingReader(nil): no error")
	}
}

// While Run runs, Services waits for the first list (a pod bound to a
// node that just started gets its variables, not an error), at most
// SyncWait: an API server that never answers gives the kubelet's error.
func TestWatchingReaderWaitsForTheFirstList(t *testing.T) {
	release := make(chan struct{})
	client := fake.NewClientset(&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
		Spec: v1.ServiceSpec{ClusterIP: "10.0.0.1", Ports: []v1.ServicePort{{Port: 443}}}})
	var mu sync.Mutex
	lists := 0
	client.PrependReactor("list", "services", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		mu.Lock()
		lists++
		mu.Unlock()
		<-release
		return false, nil, nil
	})
	reader, err := envvars.NewWatchingReader(client)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- reader.Run(runCtx) }()
	defer func() {
		stop()
		<-done
	}()
	// The list has begun and is held.
	for {
		mu.Lock()
		n := lists
		mu.Unlock()
		if n > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("no list")
		case <-time.After(5 * time.Millisecond):
		}
	}
	got := make(chan error, 1)
	go func() {
		svcs, err := reader.Services(ctx, "default")
		if err == nil && len(svcs) != 1 {
			err = fmt.Errorf("services %v", svcs)
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("Services answered while the first list was held: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-got; err != nil {
		t.Fatalf("Services after the first list: %v", err)
	}

	// A list that never ends: the error once SyncWait is over.
	stuckCtx, stopStuck := context.WithCancel(ctx)
	never := fake.NewClientset()
	never.PrependReactor("list", "services", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		<-stuckCtx.Done()
		return true, nil, stuckCtx.Err()
	})
	stuck, err := envvars.NewWatchingReader(never)
	if err != nil {
		t.Fatal(err)
	}
	stuck.SyncWait = 20 * time.Millisecond
	stuckDone := make(chan error, 1)
	go func() { stuckDone <- stuck.Run(stuckCtx) }()
	defer func() {
		stopStuck()
		<-stuckDone
	}()
	if _, err := stuck.Services(ctx, "default"); !errors.Is(err, envvars.ErrServicesNotSynced) {
		t.Errorf("Services with a list that never ends: %v", err)
	}
}
