package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// The class itself is runtime.QOSClass's, tested there; Generate sets it.
func TestGenerateSetsQOSClass(t *testing.T) {
	if got := Generate(Input{Pod: newPod([]string{"a"}), Now: sec(1)}).QOSClass; got != v1.PodQOSBestEffort {
		t.Errorf("Generate: qosClass %s", got)
	}
}
