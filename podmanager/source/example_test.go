package source_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/podlife/podlife/podmanager"
	"github.com/podlife/podlife/podmanager/source"
)

func ExampleFile() {
	dir, err := os.MkdirTemp("", "manifests")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	manifest := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: nginx\n    image: nginx\n"
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(manifest), 0o644); err != nil {
		fmt.Println(err)
		return
	}

	cfg, err := source.NewConfig(source.ConfigOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	file, err := source.NewFile(cfg.Sink(podmanager.FileSource), source.FileOptions{Path: dir, NodeName: "node1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- file.Run(ctx) }()

	u := <-cfg.Updates()
	pod := u.Pods[0]
	fmt.Println(u.Op, u.Source, podmanager.FullName(pod), podmanager.IsStaticPod(pod))
	<-cfg.Ready()
	fmt.Println("all sources seen:", cfg.SeenAllSources())

	cancel()
	fmt.Println(<-done)
	// Output:
	// ADD file web-node1_default true
	// all sources seen: true
	// context canceled
}

func ExampleConfig() {
	cfg, err := source.NewConfig(source.ConfigOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ch, err := source.NewChannel(cfg.Sink("agent"), source.ChannelOptions{Source: "agent", NodeName: "node1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx) }()

	push := func(images ...string) {
		pods, err := source.DecodePods([]byte(podList(images...)))
		if err != nil {
			fmt.Println(err)
			return
		}
		if err := ch.Push(ctx, pods); err != nil {
			fmt.Println(err)
		}
		for len(cfg.Updates()) > 0 {
			u := <-cfg.Updates()
			fmt.Print(u.Op)
			for _, p := range u.Pods {
				fmt.Print(" ", p.Name)
			}
			fmt.Println()
		}
	}
	push("a", "b")
	push("b", "c")

	cancel()
	<-done
	// Output:
	// ADD a-node1 b-node1
	// REMOVE a-node1
	// ADD c-node1
}

// podList returns a PodList with one pod per name.
func podList(names ...string) string {
	s := `{"apiVersion":"v1","kind":"PodList","items":[`
	for i, n := range names {
		if i > 0 {
			s += ","
		}
		s += `{"metadata":{"name":"` + n + `"},"spec":{"containers":[{"name":"c","image":"i"}]}}`
	}
	return s + "]}"
}

// Example_podManager shows the consumer side an agent builds: every update
// is applied to a podmanager.Manager (REMOVE removes, every other operation
// stores the newest pod), then handed to the pod workers (not shown).
func Example_podManager() {
	cfg, err := source.NewConfig(source.ConfigOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	static, err := source.NewChannel(cfg.Sink("file"), source.ChannelOptions{Source: podmanager.FileSource, NodeName: "node1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- static.Run(ctx) }()

	m := podmanager.New()
	apply := func() {
		for len(cfg.Updates()) > 0 {
			u := <-cfg.Updates()
			for _, pod := range u.Pods {
				if u.Op == source.REMOVE {
					m.RemovePod(pod)
				} else {
					m.UpdatePod(pod)
				}
			}
		}
	}

	pods, _ := source.DecodePods([]byte(podList("etcd", "scheduler")))
	if err := static.Push(ctx, pods); err != nil {
		fmt.Println(err)
		return
	}
	apply()
	pods, _ = source.DecodePods([]byte(podList("etcd")))
	if err := static.Push(ctx, pods); err != nil {
		fmt.Println(err)
		return
	}
	apply()

	for _, pod := range m.GetPods() {
		fmt.Println(podmanager.FullName(pod), podmanager.IsStaticPod(pod), podmanager.PodHash(pod) == string(pod.UID))
	}
	cancel()
	<-done
	// Output:
	// etcd-node1_default true true
}
