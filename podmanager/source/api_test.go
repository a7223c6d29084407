package source

import (
	"sync"
	"testing"

	"github.com/go-logr/logr/testr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podlife/podlife/podmanager"
)

func boundPod(name, uid, node string) *v1.Pod {
	p := testPod(name, uid)
	p.Spec.NodeName = node
	return p
}

// runAPISource runs an API source of node1's pods on cs until the test
// ends, and returns its Config and a consumer of it.
func runAPISource(t *testing.T, cs *fake.Clientset) (*Config, *consumer) {
	t.Helper()
	cfg, err := NewConfig(ConfigOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src, err := NewAPI(cfg.Sink(podmanager.APISource), APIOptions{Client: cs, NodeName: "node1", Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	c := newConsumer(t, cfg)
	runSource(t, src.Run)
	return cfg, c
}

func TestAPISource(t *testing.T) {
	ctx := t.Context()
	cs := fake.NewClientset(boundPod("a", "1", "node1"), boundPod("elsewhere", "9", "node2"))
	cfg, c := runAPISource(t, cs)

	c.waitNames("a")
	<-cfg.Ready()
	if got := c.byName("a").Annotations[podmanager.ConfigSourceAnnotationKey]; got != podmanager.APISource {
		t.Errorf("config.source = %q", got)
	}
	if podmanager.IsStaticPod(c.byName("a")) {
		t.Error("API pod reported static")
	}

	pods := cs.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, boundPod("b", "2", "node1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitNames("a", "b")

	// Graceful deletion in the API: DELETE.
	b := boundPod("b", "2", "node1")
	now := metav1.NewTime(t0)
	grace := int64(30)
	b.DeletionTimestamp, b.DeletionGracePeriodSeconds = &now, &grace
	if _, err := pods.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("DELETE of b", func() bool { last := c.history[len(c.history)-1]; return last.Op == DELETE })

	// Status only: RECONCILE.
	a := boundPod("a", "1", "node1")
	a.Status.Phase = v1.PodRunning
	if _, err := pods.UpdateStatus(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("RECONCILE of a", func() bool { last := c.history[len(c.history)-1]; return last.Op == RECONCILE })

	// Removed from the API: REMOVE.
	if err := pods.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitNames("a")

	// The list and watch asked for this node's pods only.
	var selectors []string
	for _, action := range cs.Actions() {
		switch a := action.(type) {
		case k8stesting.ListAction:
			selectors = append(selectors, a.GetListRestrictions().Fields.String())
		case k8stesting.WatchAction:
			selectors = append(selectors, a.GetWatchRestrictions().Fields.String())
		}
	}
	if len(selectors) < 2 {
		t.Fatalf("list/watch actions: %v", selectors)
	}
	for _, s := range selectors {
		if s != "spec.nodeName=node1" {
			t.Errorf("field selector %q", s)
		}
	}
}

// The pods are passed on without their managedFields (several KB each,
// never read), whether listed or watched.
func TestAPISourceDropsManagedFields(t *testing.T) {
	managed := func(p *v1.Pod) *v1.Pod {
		p.Annotations = map[string]string{"example.com/owner": "test"}
		p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kube-scheduler", Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:nodeName":{}}}`)}}}
		return p
	}
	cs := fake.NewClientset(managed(boundPod("listed", "1", "node1")))
	// A pod created between the list and the watch: the fake clientset's
	// watch delivers it as the very object its tracker keeps.
	var once sync.Once
	cs.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		once.Do(func() {
			if err := cs.Tracker().Add(managed(boundPod("between", "3", "node1"))); err != nil {
				t.Error(err)
			}
		})
		return false, nil, nil
	})
	_, c := runAPISource(t, cs)
	c.waitNames("between", "listed")
	if _, err := cs.CoreV1().Pods("default").Create(t.Context(), managed(boundPod("watched", "2", "node1")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitNames("between", "listed", "watched")
	for _, name := range []string{"listed", "between", "watched"} {
		if mf := c.byName(name).ManagedFields; mf != nil {
			t.Errorf("pod %s passed on with managedFields %v", name, mf)
		}
		// The objects the client handed over are left as they are: a
		// client may share them (the fake clientset's watch sends the
		// very objects its tracker keeps, and reads them meanwhile).
		o, err := cs.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), "default", name)
		if err != nil {
			t.Fatal(err)
		}
		if o.(*v1.Pod).ManagedFields == nil {
			t.Errorf("pod %s: the client's copy lost its managedFields", name)
		}
		if got := o.(*v1.Pod).Annotations; len(got) != 1 {
			t.Errorf("pod %s: the client's copy has annotations %v, want only its own", name, got)
		}
	}
}

func TestNewAPIValidates(t *testing.T) {
	if _, err := NewAPI(SinkFunc(nil), APIOptions{NodeName: "n"}); err == nil {
		t.Error("no client: want error")
	}
	if _, err := NewAPI(SinkFunc(nil), APIOptions{Client: fake.NewClientset()}); err == nil {
		t.Error("no node: want error")
	}
	if _, err := NewAPI(nil, APIOptions{Client: fake.NewClientset(), NodeName: "n"}); err == nil {
		t.Error("no sink: want error")
	}
}
