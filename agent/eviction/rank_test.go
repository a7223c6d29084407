package eviction

import (
	"math/rand/v2"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// The pass's one-walk choice is the head of the full ranking, for any
// usage, requests and priorities.
func TestFirstIsHeadOfRank(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := newFakeNode()
		var pods []*v1.Pod
		for i := range 1 + r.IntN(30) {
			req := []string{"", "10Mi", "100Mi"}[r.IntN(3)]
			p := n.addPod(string(rune('a'+i%26))+string(rune('a'+i/26)), req, "", int64(r.IntN(4))*50*mi)
			if r.IntN(3) == 0 {
				prio := int32(r.IntN(3))
				p.Spec.Priority = &prio
			}
			if r.IntN(10) == 0 {
				delete(n.usage, p.UID)
			}
			pods = append(pods, p)
		}
		stats := statsByUID(mustList(t, n), nil)
		skip := types.UID("")
		if r.IntN(2) == 0 {
			skip = pods[r.IntN(len(pods))].UID
		}
		ok := func(p *v1.Pod) bool { return p.UID != skip }
		want := (*v1.Pod)(nil)
		for _, p := range rank(pods, stats, SignalMemoryAvailable, false) {
			if ok(p) {
				want = p
				break
			}
		}
		if got := first(rankKeys(nil, pods, stats, SignalMemoryAvailable, false), ok); got != want {
			t.Fatalf("first %v, head of rank %v", got.Name, want.Name)
		}
	}
}

func mustList(t *testing.T, n *fakeNode) []statsapi.PodStats {
	l, err := n.ListPodStats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return l
}
