package podmanager

import (
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func staticPod(name, uid, hash string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "ns", UID: types.UID(uid),
		Annotations: map[string]string{ConfigSourceAnnotationKey: FileSource, ConfigHashAnnotationKey: hash},
	}}
}

func mirrorPod(name, uid, hash string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "ns", UID: types.UID(uid),
		Annotations: map[string]string{ConfigSourceAnnotationKey: APISource, ConfigMirrorAnnotationKey: hash},
	}}
}

func apiPod(name, uid string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "ns", UID: types.UID(uid),
		Annotations: map[string]string{ConfigSourceAnnotationKey: APISource},
	}}
}

func uids(pods []*v1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, string(p.UID))
	}
	sort.Strings(out)
	return out
}

// view is everything observable about a Manager.
type view struct {
	Pods, Mirrors, Orphans []string
	PodToMirror            map[types.UID]types.UID
	MirrorToPod            map[types.UID]types.UID
}

func viewOf(m *Manager) view {
	pods, mirrors, orphans := m.GetPodsAndMirrorPods()
	sort.Strings(orphans)
	if orphans == nil {
		orphans = []string{}
	}
	p2m, m2p := m.GetUIDTranslations()
	return view{Pods: uids(pods), Mirrors: uids(mirrors), Orphans: orphans, PodToMirror: p2m, MirrorToPod: m2p}
}

func TestManagerIndexes(t *testing.T) {
	type uidMap = map[types.UID]types.UID
	tests := []struct {
		name string
		ops  func(m *Manager)
		want view
	}{
		{
			name: "empty",
			ops:  func(*Manager) {},
			want: view{Pods: []string{}, Mirrors: []string{}, Orphans: []string{}, PodToMirror: uidMap{}, MirrorToPod: uidMap{}},
		},
		{
			name: "api pod is not translated",
			ops:  func(m *Manager) { m.AddPod(apiPod("a", "1")) },
			want: view{Pods: []string{"1"}, Mirrors: []string{}, Orphans: []string{}, PodToMirror: uidMap{}, MirrorToPod: uidMap{}},
		},
		{
			name: "static pod without mirror",
			ops:  func(m *Manager) { m.AddPod(staticPod("s", "s1", "h1")) },
			want: view{Pods: []string{"s1"}, Mirrors: []string{}, Orphans: []string{}, PodToMirror: uidMap{"s1": ""}, MirrorToPod: uidMap{}},
		},
		{
			name: "static then mirror",
			ops: func(m *Manager) {
				m.AddPod(staticPod("s", "s1", "h1"))
				m.AddPod(mirrorPod("s", "m1", "h1"))
			},
			want: view{Pods: []string{"s1"}, Mirrors: []string{"m1"}, Orphans: []string{}, PodToMirror: uidMap{"s1": "m1"}, MirrorToPod: uidMap{"m1": "s1"}},
		},
		{
			name: "mirror then static",
			ops: func(m *Manager) {
				m.AddPod(mirrorPod("s", "m1", "h1"))
				m.AddPod(staticPod("s", "s1", "h1"))
			},
			want: view{Pods: []string{"s1"}, Mirrors: []string{"m1"}, Orphans: []string{}, PodToMirror: uidMap{"s1": "m1"}, MirrorToPod: uidMap{"m1": "s1"}},
		},
		{
			name: "orphaned mirror",
			ops:  func(m *Manager) { m.AddPod(mirrorPod("s", "m1", "h1")) },
			want: view{Pods: []string{}, Mirrors: []string{"m1"}, Orphans: []string{"s_ns"}, PodToMirror: uidMap{}, MirrorToPod: uidMap{}},
		},
		{
			name: "static removed leaves an orphaned mirror",
			ops: func(m *Manager) {
				m.AddPod(staticPod("s", "s1", "h1"))
				m.AddPod(mirrorPod("s", "m1", "h1"))
				m.RemovePod(staticPod("s", "s1", "h1"))
			},
			want: view{Pods: []string{}, Mirrors: []string{"m1"}, Orphans: []string{"s_ns"}, PodToMirror: uidMap{}, MirrorToPod: uidMap{}},
		},
		{
			name: "mirror removed",
			ops: func(m *Manager) {
				m.AddPod(staticPod("s", "s1", "h1"))
				m.AddPod(mirrorPod("s", "m1", "h1"))
				m.RemovePod(mirrorPod("s", "m1", "h1"))
			},
			want: view{Pods: []string{"s1"}, Mirrors: []string{}, Orphans: []string{}, PodToMirror: uidMap{"s1": ""}, MirrorToPod: uidMap{}},
		},
		{
			name: "new static incarnation takes over the mirror",
			ops: func(m *Manager) {
				m.AddPod(staticPod("s", "s1", "h1"))
				m.AddPod(mirrorPod("s", "m1", "h1"))
				m.AddPod(staticPod("s", "s2", "h2"))
				// Removing the old incarnation must not touch the new one.
				m.RemovePod(staticPod("s", "s1", "h1"))
			},
			want: view{Pods: []string{"s2"}, Mirrors: []string{"m1"}, Orphans: []string{}, PodToMirror: uidMap{"s2": "m1"}, MirrorToPod: uidMap{"m1": "s2"}},
		},
		{
			name: "SetPods replaces everything",
			ops: func(m *Manager) {
				m.AddPod(apiPod("old", "o"))
				m.SetPods([]*v1.Pod{staticPod("s", "s1", "h1"), mirrorPod("s", "m1", "h1"), apiPod("a", "1")})
			},
			want: view{Pods: []string{"1", "s1"}, Mirrors: []string{"m1"}, Orphans: []string{}, PodToMirror: uidMap{"s1": "m1"}, MirrorToPod: uidMap{"m1": "s1"}},
		},
		{
			name: "nil pods are ignored",
			ops: func(m *Manager) {
				m.AddPod(nil)
				m.RemovePod(nil)
			},
			want: view{Pods: []string{}, Mirrors: []string{}, Orphans: []string{}, PodToMirror: uidMap{}, MirrorToPod: uidMap{}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := New()
			tc.ops(m)
			if diff := cmp.Diff(tc.want, viewOf(m)); diff != "" {
				t.Errorf("view (-want +got):\n%s", diff)
			}
		})
	}
}

func TestManagerLookups(t *testing.T) {
	m := New()
	static := staticPod("s", "s1", "h1")
	mirror := mirrorPod("s", "m1", "h1")
	regular := apiPod("a", "a1")
	m.SetPods([]*v1.Pod{static, mirror, regular})

	if got, ok := m.GetPodByUID("s1"); !ok || got != static {
		t.Errorf("GetPodByUID(s1) = %v, %v", got, ok)
	}
	if _, ok := m.GetPodByUID("m1"); ok {
		t.Error("GetPodByUID found a mirror pod")
	}
	if got, ok := m.GetMirrorPodByUID("m1"); !ok || got != mirror {
		t.Errorf("GetMirrorPodByUID(m1) = %v, %v", got, ok)
	}
	if got, ok := m.GetPodByFullName("a_ns"); !ok || got != regular {
		t.Errorf("GetPodByFullName(a_ns) = %v, %v", got, ok)
	}
	if got, ok := m.GetPodByName("ns", "s"); !ok || got != static {
		t.Errorf("GetPodByName(ns, s) = %v, %v", got, ok)
	}
	if got := m.TranslatePodUID("m1"); got != "s1" {
		t.Errorf("TranslatePodUID(m1) = %q", got)
	}
	for _, uid := range []types.UID{"s1", "a1", "unknown", ""} {
		if got := m.TranslatePodUID(uid); got != uid {
			t.Errorf("TranslatePodUID(%q) = %q", uid, got)
		}
	}
	if p, mp, wasMirror := m.GetPodAndMirrorPod(mirror); p != static || mp != mirror || !wasMirror {
		t.Errorf("GetPodAndMirrorPod(mirror) = %v, %v, %v", p, mp, wasMirror)
	}
	if p, mp, wasMirror := m.GetPodAndMirrorPod(static); p != static || mp != mirror || wasMirror {
		t.Errorf("GetPodAndMirrorPod(static) = %v, %v, %v", p, mp, wasMirror)
	}
	if p, mp, wasMirror := m.GetPodAndMirrorPod(regular); p != regular || mp != nil || wasMirror {
		t.Errorf("GetPodAndMirrorPod(regular) = %v, %v, %v", p, mp, wasMirror)
	}
	if got, ok := m.GetMirrorPodByPod(static); !ok || got != mirror {
		t.Errorf("GetMirrorPodByPod = %v, %v", got, ok)
	}
	if got, ok := m.GetPodByMirrorPod(mirror); !ok || got != static {
		t.Errorf("GetPodByMirrorPod = %v, %v", got, ok)
	}
	if got := uids(m.GetPods()); !cmp.Equal(got, []string{"a1", "s1"}) {
		t.Errorf("GetPods = %v", got)
	}
	if !m.IsMirrorPodOf(mirror, static) {
		t.Error("IsMirrorPodOf(mirror, static) = false")
	}
}

func TestIsMirrorPodOf(t *testing.T) {
	tests := []struct {
		name        string
		mirror, pod *v1.Pod
		want        bool
	}{
		{"match", mirrorPod("s", "m", "h"), staticPod("s", "p", "h"), true},
		{"stale hash", mirrorPod("s", "m", "old"), staticPod("s", "p", "h"), false},
		{"other name", mirrorPod("t", "m", "h"), staticPod("s", "p", "h"), false},
		{"not a mirror", staticPod("s", "m", "h"), staticPod("s", "p", "h"), false},
		{"nil mirror", nil, staticPod("s", "p", "h"), false},
		{"nil pod", mirrorPod("s", "m", "h"), nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsMirrorPodOf(tc.mirror, tc.pod); got != tc.want {
				t.Errorf("IsMirrorPodOf = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestManagerConcurrentUse(t *testing.T) {
	m := New()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				name := fmt.Sprintf("p%d-%d", w, i)
				m.AddPod(staticPod(name, name, "h"))
				m.AddPod(mirrorPod(name, "m"+name, "h"))
				m.GetPodsAndMirrorPods()
				m.TranslatePodUID(types.UID("m" + name))
				m.RemovePod(staticPod(name, name, "h"))
			}
		}()
	}
	wg.Wait()
	_, mirrors, orphans := m.GetPodsAndMirrorPods()
	if len(mirrors) != 800 || len(orphans) != 800 {
		t.Fatalf("mirrors %d orphans %d, want 800 each", len(mirrors), len(orphans))
	}
}

func BenchmarkGetPodsAndMirrorPods10k(b *testing.B) {
	m := New()
	for i := 0; i < 10000; i++ {
		name := fmt.Sprintf("pod-%d", i)
		if i%10 == 0 {
			m.AddPod(staticPod(name, name, "h"))
			m.AddPod(mirrorPod(name, "m-"+name, "h"))
			continue
		}
		m.AddPod(apiPod(name, name))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.GetPodsAndMirrorPods()
	}
}
