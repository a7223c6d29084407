package source

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/podmanager"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// testPod returns a pod with one container; opts edit it.
func testPod(name, uid string, opts ...func(*v1.Pod)) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(uid)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
	}
	for _, o := range opts {
		o(pod)
	}
	return pod
}

func withImage(image string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Containers[0].Image = image }
}
func withLabel(k, v string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
}
func withAnnotation(k, v string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}
func withPhase(phase v1.PodPhase) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Status.Phase = phase }
}
func withDeletion(grace int64) func(*v1.Pod) {
	return func(p *v1.Pod) {
		ts := metav1.NewTime(t0)
		p.DeletionTimestamp = &ts
		p.DeletionGracePeriodSeconds = &grace
	}
}
func withNamespace(ns string) func(*v1.Pod) { return func(p *v1.Pod) { p.Namespace = ns } }

// opSummary is a PodUpdate reduced to comparable strings.
type opSummary struct {
	Op   string
	Pods []string // name/uid
}

func summarize(updates []PodUpdate) []opSummary {
	out := []opSummary{}
	for _, u := range updates {
		s := opSummary{Op: u.Op.String(), Pods: []string{}}
		for _, p := range u.Pods {
			s.Pods = append(s.Pods, p.Name+"/"+string(p.UID))
		}
		out = append(out, s)
	}
	return out
}

func TestMerge(t *testing.T) {
	type step struct {
		pods []*v1.Pod
		want []opSummary
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{
			name: "first empty snapshot sends an empty ADD",
			steps: []step{
				{pods: nil, want: []opSummary{{"ADD", []string{}}}},
				{pods: nil, want: []opSummary{}},
			},
		},
		{
			name: "new pods are added; unchanged pods send nothing",
			steps: []step{
				{pods: []*v1.Pod{testPod("a", "1"), testPod("b", "2")}, want: []opSummary{{"ADD", []string{"a/1", "b/2"}}}},
				{pods: []*v1.Pod{testPod("a", "1"), testPod("b", "2")}, want: []opSummary{}},
			},
		},
		{
			name: "spec, label and annotation changes are UPDATE",
			steps: []step{
				{pods: []*v1.Pod{testPod("a", "1"), testPod("b", "2"), testPod("c", "3")}, want: []opSummary{{"ADD", []string{"a/1", "b/2", "c/3"}}}},
				{
					pods: []*v1.Pod{testPod("a", "1", withImage("nginx")), testPod("b", "2", withLabel("k", "v")), testPod("c", "3", withAnnotation("x", "y"))},
					want: []opSummary{{"UPDATE", []string{"a/1", "b/2", "c/3"}}},
				},
			},
		},
		{
			name: "local annotations are not a change",
			steps: []step{
				{pods: []*v1.Pod{testPod("a", "1")}, want: []opSummary{{"ADD", []string{"a/1"}}}},
				{pods: []*v1.Pod{testPod("a", "1", withAnnotation(podmanager.ConfigFirstSeenAnnotationKey, "later"))}, want: []opSummary{}},
			},
		},
		{
			name: "deletion timestamp is DELETE",
			steps: []step{
				{pods: []*v1.Pod{testPod("a", "1")}, want: []opSummary{{"ADD", []string{"a/1"}}}},
				{pods: []*v1.Pod{testPod("a", "1", withDeletion(30))}, want: []opSummary{{"DELETE", []string{"a/1"}}}},
				{pods: []*v1.Pod{testPod("a", "1", withDeletion(0))}, want: []opSummary{{"DELETE", []string{"a/1"}}}},
			},
		},
		{
			name: "status-only change is RECONCILE",
			steps: []step{
				{pods: []*v1.Pod{testPod("a", "1")}, want: []opSummary{{"ADD", []string{"a/1"}}}},
				{pods: []*v1.Pod{testPod("a", "1", withPhase(v1.PodRunning))}, want: []opSummary{{"RECONCILE", []string{"a/1"}}}},
			},
		},
		{
			name: "missing pods are REMOVE",
			steps: []step{
				{pods: []*v1.Pod{testPod("a", "1"), testPod("b", "2")}, want: []opSummary{{"ADD", []string{"a/1", "b/2"}}}},
				{pods: []*v1.Pod{testPod("b", "2")}, want: []opSummary{{"REMOVE", []string{"a/1"}}}},
				{pods: nil, want: []opSummary{{"REMOVE", []string{"b/2"}}}},
			},
		},
		{
			name: "same name, new UID is REMOVE then ADD",
			steps: []step{
				{pods: []*v1.Pod{testPod("a", "1")}, want: []opSummary{{"ADD", []string{"a/1"}}}},
				{pods: []*v1.Pod{testPod("a", "2")}, want: []opSummary{{"REMOVE", []string{"a/1"}}, {"ADD", []string{"a/2"}}}},
			},
		},
		{
			name: "emission order REMOVE ADD UPDATE DELETE RECONCILE",
			steps: []step{
				{pods: []*v1.Pod{testPod("r", "1"), testPod("u", "2"), testPod("d", "3"), testPod("s", "4")}, want: []opSummary{{"ADD", []string{"r/1", "u/2", "d/3", "s/4"}}}},
				{
					pods: []*v1.Pod{testPod("s", "4", withPhase(v1.PodRunning)), testPod("d", "3", withDeletion(5)), testPod("u", "2", withImage("new")), testPod("n", "5")},
					want: []opSummary{
						{"REMOVE", []string{"r/1"}},
						{"ADD", []string{"n/5"}},
						{"UPDATE", []string{"u/2"}},
						{"DELETE", []string{"d/3"}},
						{"RECONCILE", []string{"s/4"}},
					},
				},
			},
		},
		{
			name: "first snapshot with only status-bearing pods has no empty ADD",
			steps: []step{
				{pods: []*v1.Pod{testPod("a", "1", withPhase(v1.PodRunning))}, want: []opSummary{{"ADD", []string{"a/1"}}}},
			},
		},
		{
			name: "duplicate full name keeps the first",
			steps: []step{
				{pods: []*v1.Pod{testPod("a", "1"), testPod("a", "2"), testPod("a", "3", withNamespace("other"))}, want: []opSummary{{"ADD", []string{"a/1", "a/3"}}}},
			},
		},
		{
			name: "duplicate UID and empty UID are dropped",
			steps: []step{
				{pods: []*v1.Pod{testPod("a", "1"), testPod("b", "1"), testPod("c", ""), nil}, want: []opSummary{{"ADD", []string{"a/1"}}}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &snapshot{pods: map[types.UID]*v1.Pod{}}
			for i, st := range tc.steps {
				ch := s.merge("test", st.pods, t0, func(string, error) {})
				if diff := cmp.Diff(st.want, summarize(ch.podUpdates("test"))); diff != "" {
					t.Errorf("step %d: updates (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

func TestMergeStampsAndKeepsAnnotations(t *testing.T) {
	s := &snapshot{pods: map[types.UID]*v1.Pod{}}
	nop := func(string, error) {}
	ch := s.merge("file", []*v1.Pod{testPod("a", "1")}, t0, nop)
	first := ch.adds[0]
	if got := first.Annotations[podmanager.ConfigSourceAnnotationKey]; got != "file" {
		t.Errorf("config.source = %q", got)
	}
	seen := first.Annotations[podmanager.ConfigFirstSeenAnnotationKey]
	if seen != t0.Format(time.RFC3339Nano) {
		t.Errorf("config.seen = %q", seen)
	}
	ch = s.merge("file", []*v1.Pod{testPod("a", "1", withImage("other"))}, t0.Add(time.Hour), nop)
	updated := ch.updates[0]
	if got := updated.Annotations[podmanager.ConfigFirstSeenAnnotationKey]; got != seen {
		t.Errorf("config.seen after update = %q, want %q", got, seen)
	}
	if updated == first {
		t.Error("update reused the emitted pod object")
	}
	if first.Spec.Containers[0].Image != "busybox" {
		t.Error("the emitted pod was modified by a later merge")
	}
}

func TestMergeReportsDuplicates(t *testing.T) {
	s := &snapshot{pods: map[types.UID]*v1.Pod{}}
	var got []error
	s.merge("file", []*v1.Pod{testPod("a", "1"), testPod("a", "2")}, t0, func(origin string, err error) {
		if origin != "a_default" {
			t.Errorf("origin = %q", origin)
		}
		got = append(got, err)
	})
	if len(got) != 1 || !errors.Is(got[0], ErrDuplicateFullName) {
		t.Fatalf("errors = %v, want one ErrDuplicateFullName", got)
	}
}

func TestConfigReadiness(t *testing.T) {
	ctx := t.Context()
	var reported []error
	cfg, err := NewConfig(ConfigOptions{Clock: clocktesting.NewFakePassiveClock(t0), OnError: func(err error) { reported = append(reported, err) }})
	if err != nil {
		t.Fatal(err)
	}
	file := cfg.Sink("file")
	api := cfg.Sink("api")
	if cfg.SeenAllSources() {
		t.Fatal("ready before any snapshot")
	}
	if err := file.Set(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if cfg.SeenAllSources() {
		t.Fatal("ready with one of two sources")
	}
	if err := api.Set(ctx, []*v1.Pod{testPod("a", "1"), testPod("a", "2")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cfg.Ready():
	default:
		t.Fatal("Ready not closed after both sources")
	}
	var got []PodUpdate
	for len(cfg.Updates()) > 0 {
		got = append(got, <-cfg.Updates())
	}
	want := []opSummary{{"ADD", []string{}}, {"ADD", []string{"a/1"}}}
	if diff := cmp.Diff(want, summarize(got)); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
	if got[0].Source != "file" || got[1].Source != "api" {
		t.Errorf("sources = %q, %q", got[0].Source, got[1].Source)
	}
	if cfg.Errors() != 1 || len(reported) != 1 {
		t.Fatalf("Errors() = %d, reported %v", cfg.Errors(), reported)
	}
	var e *Error
	if !errors.As(reported[0], &e) || e.Source != "api" || !errors.Is(e, ErrDuplicateFullName) {
		t.Errorf("reported %v", reported[0])
	}
}

func TestConfigSetHonoursContext(t *testing.T) {
	cfg, err := NewConfig(ConfigOptions{BufferSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	sink := cfg.Sink("file")
	ctx, cancel := context.WithCancel(t.Context())
	// REMOVE-less first snapshot: ADD then RECONCILE would need 2 slots;
	// one ADD fills the buffer.
	if err := sink.Set(ctx, []*v1.Pod{testPod("a", "1")}); err != nil {
		t.Fatal(err)
	}
	cancel()
	err = sink.Set(ctx, []*v1.Pod{testPod("b", "2")})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Set on a full channel with a cancelled ctx = %v", err)
	}
}

func TestNewConfigValidates(t *testing.T) {
	if _, err := NewConfig(ConfigOptions{BufferSize: -1}); err == nil {
		t.Fatal("want error")
	}
}

func BenchmarkMerge10kOnePercentChanged(b *testing.B) {
	const n = 10000
	base := make([]*v1.Pod, n)
	for i := range base {
		base[i] = testPod(fmt.Sprintf("pod-%d", i), fmt.Sprintf("uid-%d", i))
	}
	s := &snapshot{pods: map[types.UID]*v1.Pod{}}
	nop := func(string, error) {}
	s.merge("file", clonePods(base), t0, nop)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		next := clonePods(base)
		for j := 0; j < n/100; j++ {
			next[(j*100+i)%n].Spec.Containers[0].Image = fmt.Sprintf("img-%d", i)
		}
		b.StartTimer()
		s.merge("file", next, t0, nop)
	}
}

func clonePods(in []*v1.Pod) []*v1.Pod {
	out := make([]*v1.Pod, len(in))
	for i, p := range in {
		out[i] = p.DeepCopy()
	}
	return out
}

// BenchmarkMerge10kOnePercentChangedSameObjects is the path of the file and
// API sources: unchanged pods are handed back as the same objects.
func BenchmarkMerge10kOnePercentChangedSameObjects(b *testing.B) {
	const n = 10000
	current := make([]*v1.Pod, n)
	for i := range current {
		current[i] = testPod(fmt.Sprintf("pod-%d", i), fmt.Sprintf("uid-%d", i))
	}
	s := &snapshot{pods: map[types.UID]*v1.Pod{}}
	nop := func(string, error) {}
	s.merge("file", append([]*v1.Pod(nil), current...), t0, nop)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		next := append([]*v1.Pod(nil), current...)
		for j := 0; j < n/100; j++ {
			k := (j*100 + i) % n
			p := next[k].DeepCopy()
			p.Spec.Containers[0].Image = fmt.Sprintf("img-%d", i)
			next[k] = p
		}
		current = next
		b.StartTimer()
		s.merge("file", next, t0, nop)
	}
}
