package volume_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/podlife/podlife/agent/volume"
)

func ExampleWriteAtomic() {
	dir, _ := os.MkdirTemp("", "volume-example")
	defer os.RemoveAll(dir)
	now := time.Date(2026, 12, 4, 15, 0, 0, 0, time.UTC)
	_, _ = volume.WriteAtomic(dir, map[string]volume.File{"config.yaml": {Data: []byte("a: 1\n"), Mode: 0o644}}, now)
	_, _ = volume.WriteAtomic(dir, map[string]volume.File{"config.yaml": {Data: []byte("a: 2\n"), Mode: 0o644}}, now.Add(time.Second))

	link, _ := os.Readlink(filepath.Join(dir, "config.yaml"))
	b, _ := os.ReadFile(filepath.Join(dir, "config.yaml"))
	fmt.Println(link)
	fmt.Print(string(b))
	// Output:
	// ..data/config.yaml
	// a: 2
}
