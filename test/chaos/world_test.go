package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Names the soak uses.
const (
	nodeName     = "chaos-node"
	apiNamespace = "chaos"
	testImage    = "localhost/podlife/pause:1.0"
)

// staticSlot is one manifest file of the manifest folder.
type staticSlot struct {
	idx     int
	present bool // the file exists
	version int  // bumped by an edit: a new derived UID
	grace   int
	hang    bool // the container ignores SIGTERM: a stop lasts the grace period
	// readdAt, when set, is when the file comes back with the same content
	// (the same UID recreated while it terminates).
	readdAt time.Time
}

func (s *staticSlot) file() string { return fmt.Sprintf("s%04d.yaml", s.idx) }
func (s *staticSlot) name() string { return fmt.Sprintf("s%04d", s.idx) }

// fullName is the static pod's full name (the file source adds the node).
func (s *staticSlot) fullName() string { return s.name() + "-" + nodeName + "_default" }

func (s *staticSlot) manifest() string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  terminationGracePeriodSeconds: %d\n  containers:\n  - name: main\n    image: %s\n    args: [%q, %q]\n",
		s.name(), s.grace, testImage, mode(s.hang), fmt.Sprintf("v%d", s.version))
	return b.String()
}

func mode(hang bool) string {
	if hang {
		return "hang"
	}
	return "run"
}

// apiSlot is one pod name of the "API server" (the channel source).
type apiSlot struct {
	idx int
	gen int // bumped for each new pod (a new UID) of this name
	// pod is the current API object, nil when there is none.
	pod *v1.Pod
	// readd, when set at readdAt, comes back as it was before a force
	// delete (the same UID recreated while it terminates).
	readd   *v1.Pod
	readdAt time.Time
	// incarnations counts the re-adds of the current UID: each re-added
	// object carries the count in incarnationKey, so that a final status
	// of the incarnation before is not taken for the current one's.
	incarnations int
}

// rejectLabel marks API pods the agent's admission handler rejects.
const rejectLabel = "chaos.podlife.io/reject"

// rejectReason is the reason the soak's admission handler gives.
const rejectReason = "ChaosRejected"

// rejected reports whether the soak's admission handler rejects pod.
func rejected(pod *v1.Pod) bool { return pod.Labels[rejectLabel] == "true" }

// incarnationKey is the annotation that tells incarnations of one UID apart.
const incarnationKey = "chaos.podlife.io/incarnation"

func (s *apiSlot) name() string { return fmt.Sprintf("a%04d", s.idx) }

// isJob reports whether pod may run to completion (RestartPolicy Never or
// OnFailure).
func isJob(pod *v1.Pod) bool { return pod.Spec.RestartPolicy != v1.RestartPolicyAlways }

// deleting reports whether the current object carries a deletion timestamp.
func (s *apiSlot) deleting() bool { return s.pod != nil && s.pod.DeletionTimestamp != nil }

// newAPIPod builds a new API pod for slot s.
func newAPIPod(s *apiSlot, grace int64, hang bool, containers int, policy v1.RestartPolicy) *v1.Pod {
	s.gen++
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:              s.name(),
			Namespace:         apiNamespace,
			UID:               types.UID(fmt.Sprintf("%s-g%d", s.name(), s.gen)),
			CreationTimestamp: metav1.Now(),
			Labels:            map[string]string{"rev": "0"},
		},
		Spec: v1.PodSpec{
			NodeName:                      nodeName,
			RestartPolicy:                 policy,
			TerminationGracePeriodSeconds: &grace,
		},
	}
	for i := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{
			Name:  fmt.Sprintf("c%d", i),
			Image: testImage,
			Args:  []string{mode(hang), "v0"},
		})
	}
	return pod
}

// writeManifest writes atomically (a rename), so that the file watch never
// reads half a manifest.
func writeManifest(dir string, s *staticSlot) error {
	tmp := filepath.Join(dir, ".tmp-"+s.file())
	if err := os.WriteFile(tmp, []byte(s.manifest()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, s.file()))
}

func removeManifest(dir string, s *staticSlot) error {
	err := os.Remove(filepath.Join(dir, s.file()))
	if os.IsNotExist(err) {
		return nil
	}
	return err
}
