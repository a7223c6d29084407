package volume

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A pod's first read of an object returns as soon as the object's watch
// has listed it, not at the next tick of a 100 ms poll
// (cache.WaitForCacheSync): each ConfigMap or Secret volume of a starting
// pod waits for its own watch, one after the other, so a poll delays a
// pod with a ConfigMap and a Secret by up to 200 ms. In a synctest bubble
// time moves only when every goroutine waits, so the read takes no time
// at all unless it sleeps.
func TestFirstReadWaitsForTheListNotForAPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset(
			&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"a": "1"}},
			&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"b": []byte("2")}},
		)
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		w := &objectWatcher{client: client, onChange: func() {}, objs: map[objectKey]*watchedObject{}, ctx: ctx, wg: &wg}
		defer func() { cancel(); wg.Wait() }()

		start := time.Now()
		for _, key := range []objectKey{{namespace: "ns", name: "cm"}, {secret: true, namespace: "ns", name: "s"}} {
			obj, err := w.get(ctx, key, "u1")
			if err != nil || obj == nil {
				t.Fatalf("get %s: %v, %v", key, obj, err)
			}
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("reading a ConfigMap and a Secret took %v of waiting, want none", d)
		}
		// A missing object is known as soon as its (empty) list came.
		start = time.Now()
		if _, err := w.get(ctx, objectKey{namespace: "ns", name: "missing"}, "u1"); err == nil {
			t.Error("missing ConfigMap: no error")
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("a missing ConfigMap took %v of waiting, want none", d)
		}
	})
}
