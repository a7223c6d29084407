package source

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/podmanager"
)

func TestChannelSource(t *testing.T) {
	ctx := t.Context()
	cfg, err := NewConfig(ConfigOptions{})
	if err != nil {
		t.Fatal(err)
	}
	errs := newErrorLog()
	src, err := NewChannel(cfg.Sink(podmanager.APISource), ChannelOptions{Source: podmanager.APISource, OnError: errs.onError})
	if err != nil {
		t.Fatal(err)
	}
	c := newConsumer(t, cfg)
	runSource(t, src.Run)

	mine := testPod("a", "1")
	noContainers := testPod("bad", "2")
	noContainers.Spec.Containers = nil
	if err := src.Push(ctx, []*v1.Pod{mine, noContainers}); err != nil {
		t.Fatal(err)
	}
	c.waitNames("a")
	if !cfg.SeenAllSources() {
		t.Error("not ready after the first push")
	}
	if _, ok := mine.Annotations[podmanager.ConfigSourceAnnotationKey]; ok {
		t.Error("Push modified the caller's pod")
	}
	if e := errs.waitFor(t, ErrInvalidPod); e.Origin != "bad_default" {
		t.Errorf("origin %q", e.Origin)
	}
	if src.Errors() != 1 {
		t.Errorf("Errors() = %d", src.Errors())
	}
	if err := src.Push(ctx, nil); err != nil {
		t.Fatal(err)
	}
	c.waitNames()
}

func TestChannelSourceStaticDefaults(t *testing.T) {
	ctx := t.Context()
	cfg, err := NewConfig(ConfigOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src, err := NewChannel(cfg.Sink(DefaultChannelSource), ChannelOptions{NodeName: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	c := newConsumer(t, cfg)
	runSource(t, src.Run)
	if err := src.Push(ctx, []*v1.Pod{testPod("web", "")}); err != nil {
		t.Fatal(err)
	}
	c.waitNames("web-n1")
	p := c.byName("web-n1")
	if p.UID == "" || !podmanager.IsStaticPod(p) || p.Annotations[podmanager.ConfigSourceAnnotationKey] != DefaultChannelSource {
		t.Errorf("pod %s uid %q annotations %v", p.Name, p.UID, p.Annotations)
	}
}

func TestChannelPushBeforeRunHonoursContext(t *testing.T) {
	src, err := NewChannel(SinkFunc(nil), ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := contextWithCancel(t)
	cancel()
	if err := src.Push(ctx, nil); !errors.Is(err, ctx.Err()) {
		t.Fatalf("Push = %v", err)
	}
}
