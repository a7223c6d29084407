package podstatus

import (
	"testing"
)

// BenchmarkGenerate is the cost of one status of a running pod with a
// sidecar, an init container and two regular containers, on top of the
// previous one (what every sync of such a pod pays).
func BenchmarkGenerate(b *testing.B) {
	pod := newPod([]string{"web", "log"}, withInit("migrate"), withSidecar("proxy"))
	rt := sandboxed(exited("migrate", 0, 1), running("proxy", 2), running("web", 3), running("log", 3))
	prev := Generate(Input{Pod: pod, Runtime: rt, NodeIPs: []string{"192.168.1.2"}, Now: sec(5)})
	in := Input{Pod: pod, Runtime: rt, Previous: &prev, NodeIPs: []string{"192.168.1.2"}, Now: sec(10)}
	b.ReportAllocs()
	for b.Loop() {
		_ = Generate(in)
	}
}
