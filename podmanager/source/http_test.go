package source

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/go-logr/logr/testr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/podmanager"
)

// body is a mutable HTTP response served on loopback.
type body struct {
	mu     sync.Mutex
	status int
	data   string
}

func (b *body) set(status int, data string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.status, b.data = status, data
}

func (b *body) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.Header.Get("X-Token") != "t" {
		w.WriteHeader(http.StatusForbidden)
		return
	}
	w.WriteHeader(b.status)
	_, _ = w.Write([]byte(b.data))
}

const podList = `{"apiVersion":"v1","kind":"PodList","items":[
 {"metadata":{"name":"web"},"spec":{"containers":[{"name":"c","image":"nginx"}]}},
 {"metadata":{"name":"db","namespace":"data"},"spec":{"containers":[{"name":"c","image":"pg"}]}}]}`

func TestHTTPSource(t *testing.T) {
	b := &body{status: http.StatusInternalServerError}
	srv := httptest.NewServer(b)
	defer srv.Close()

	cfg, err := NewConfig(ConfigOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clock := clocktesting.NewFakeClock(t0)
	errs := newErrorLog()
	src, err := NewHTTP(cfg.Sink(podmanager.HTTPSource), HTTPOptions{
		URL: srv.URL, Header: http.Header{"X-Token": {"t"}}, NodeName: "node1",
		Clock: clock, Logger: testr.New(t), OnError: errs.onError,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := newConsumer(t, cfg)
	runSource(t, src.Run)

	// A failing server: reported, and the source is not ready.
	errs.waitFor(t, ErrFetch)
	if cfg.SeenAllSources() {
		t.Fatal("ready after a failed fetch")
	}

	// tick triggers one poll. The ticker exists since Run started (the
	// failed fetch above proves it), and a fake ticker buffers one tick, so
	// a step taken while the source is still busy is not lost.
	tick := func() { clock.Step(DefaultHTTPInterval) }

	b.set(http.StatusOK, podList)
	tick()
	c.waitNames("db-node1", "web-node1")
	<-cfg.Ready()
	web := c.byName("web-node1")
	if web.Namespace != "default" || !podmanager.IsStaticPod(web) || web.Annotations[podmanager.ConfigSourceAnnotationKey] != podmanager.HTTPSource {
		t.Errorf("web = %s/%s %v", web.Namespace, web.Name, web.Annotations)
	}
	if len(web.Spec.Tolerations) != 0 {
		t.Errorf("http pods get no toleration, got %v", web.Spec.Tolerations)
	}

	// A single pod.
	b.set(http.StatusOK, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: solo\nspec:\n  containers:\n  - {name: c, image: i}\n")
	tick()
	c.waitNames("solo-node1")

	// Garbage keeps the last good snapshot.
	before := src.Errors()
	b.set(http.StatusOK, "<html>")
	tick()
	errs.waitFor(t, ErrNotPod)
	if src.Errors() <= before {
		t.Error("error not counted")
	}

	// An invalid pod of a list keeps its last good version; others go on.
	b.set(http.StatusOK, `{"apiVersion":"v1","kind":"PodList","items":[
 {"metadata":{"name":"solo"},"spec":{"containers":[]}},
 {"metadata":{"name":"extra"},"spec":{"containers":[{"name":"c","image":"x"}]}}]}`)
	tick()
	c.waitNames("extra-node1", "solo-node1")
	errs.waitFor(t, ErrInvalidPod)

	// An empty body is an empty snapshot.
	b.set(http.StatusOK, "")
	tick()
	c.waitNames()
}

func TestNewHTTPValidates(t *testing.T) {
	for _, opts := range []HTTPOptions{
		{NodeName: "n"},
		{URL: "ftp://x", NodeName: "n"},
		{URL: "http://x"},
		{URL: "http://x", NodeName: "n", Interval: -1},
	} {
		if _, err := NewHTTP(SinkFunc(nil), opts); err == nil {
			t.Errorf("%+v: want error", opts)
		}
	}
}
