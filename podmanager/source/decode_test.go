package source

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/podmanager"
)

func TestDecodeManifest(t *testing.T) {
	tests := []struct {
		name     string
		data     string
		wantErr  error
		wantName string
	}{
		{"yaml pod", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n", nil, "web"},
		{"json pod", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"}}`, nil, "web"},
		{"empty", "", ErrDecode, ""},
		{"blank", " \n\t", ErrDecode, ""},
		{"bad yaml", "a: [b", ErrDecode, ""},
		{"scalar", "42", ErrNotPod, ""},
		{"list", "- a\n- b\n", ErrNotPod, ""},
		{"null", "null", ErrNotPod, ""},
		{"other kind", "apiVersion: v1\nkind: Service\n", ErrNotPod, ""},
		{"other version", "apiVersion: v2\nkind: Pod\n", ErrNotPod, ""},
		{"no type", "metadata:\n  name: web\n", ErrNotPod, ""},
		{"pod list is not a pod", "apiVersion: v1\nkind: PodList\nitems: []\n", ErrNotPod, ""},
		{"wrong field type", "apiVersion: v1\nkind: Pod\nmetadata: 3\n", ErrDecode, ""},
		{"too large", "apiVersion: v1\nkind: Pod\n" + strings.Repeat("#", MaxManifestBytes), ErrDecode, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod, err := DecodeManifest([]byte(tc.data))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if pod.Name != tc.wantName {
				t.Errorf("name = %q", pod.Name)
			}
		})
	}
}

func TestDecodePods(t *testing.T) {
	pods, err := DecodePods([]byte(podList))
	if err != nil || len(pods) != 2 || pods[0].Name != "web" || pods[1].Name != "db" {
		t.Fatalf("DecodePods(list) = %v, %v", pods, err)
	}
	pods, err = DecodePods([]byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: solo\n"))
	if err != nil || len(pods) != 1 {
		t.Fatalf("DecodePods(pod) = %v, %v", pods, err)
	}
	if _, err := DecodePods([]byte("apiVersion: v1\nkind: Node\n")); !errors.Is(err, ErrNotPod) {
		t.Fatalf("DecodePods(node) = %v", err)
	}
}

func TestValidatePod(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*v1.Pod)
		problem string // substring of the error; "" means valid
	}{
		{"valid", func(*v1.Pod) {}, ""},
		{"no name", func(p *v1.Pod) { p.Name = "" }, "metadata.name: required"},
		{"bad name", func(p *v1.Pod) { p.Name = "Web_1" }, "metadata.name \"Web_1\""},
		{"bad namespace", func(p *v1.Pod) { p.Namespace = "a.b" }, "metadata.namespace"},
		{"no namespace", func(p *v1.Pod) { p.Namespace = "" }, "metadata.namespace: required"},
		{"no uid", func(p *v1.Pod) { p.UID = "" }, "metadata.uid"},
		{"no containers", func(p *v1.Pod) { p.Spec.Containers = nil }, "at least one container"},
		{"duplicate containers", func(p *v1.Pod) { p.Spec.Containers = append(p.Spec.Containers, p.Spec.Containers[0]) }, "duplicate container name"},
		{"init and regular share a name", func(p *v1.Pod) { p.Spec.InitContainers = []v1.Container{{Name: "c", Image: "i"}} }, "duplicate container name"},
		{"bad container name", func(p *v1.Pod) { p.Spec.Containers[0].Name = "C_1" }, "spec.containers[0].name"},
		{"no image", func(p *v1.Pod) { p.Spec.Containers[0].Image = " " }, "spec.containers[0].image: required"},
		{"negative grace", func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(-5)) }, "spec.terminationGracePeriodSeconds: must be greater than or equal to 0, got -5"},
		{"zero grace", func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(0)) }, ""},
		{"huge grace", func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(math.MaxInt64)) }, ""},
		{"zero deadline", func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(0)) }, "spec.activeDeadlineSeconds"},
		{"probe grace 0", func(p *v1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &v1.Probe{TerminationGracePeriodSeconds: ptr(int64(0))}
		}, "spec.containers[0].livenessProbe.terminationGracePeriodSeconds"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("web", "u1")
			tc.edit(pod)
			err := ValidatePod(pod)
			if tc.problem == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidPod) || !strings.Contains(err.Error(), tc.problem) {
				t.Fatalf("err = %v, want ErrInvalidPod mentioning %q", err, tc.problem)
			}
		})
	}
	if err := ValidatePod(nil); !errors.Is(err, ErrInvalidPod) {
		t.Errorf("nil pod: %v", err)
	}
}

func TestApplyStaticPodDefaults(t *testing.T) {
	decode := func(data string) *v1.Pod {
		pod, err := DecodeManifest([]byte(data))
		if err != nil {
			t.Fatal(err)
		}
		return pod
	}
	const m = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - {name: c, image: i}\n"
	uid := func(data, source, origin, node string) string {
		pod := decode(data)
		if err := ApplyStaticPodDefaults(pod, source, origin, node); err != nil {
			t.Fatal(err)
		}
		return string(pod.UID)
	}
	base := uid(m, "file", "/etc/pods/web.yaml", "node1")
	if len(base) != 32 {
		t.Errorf("uid %q: want 32 hex characters", base)
	}
	sameAsJSON := uid(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, "file", "/etc/pods/web.yaml", "node1")
	tests := []struct {
		name string
		got  string
		same bool
	}{
		{"deterministic", uid(m, "file", "/etc/pods/web.yaml", "node1"), true},
		{"format does not matter", sameAsJSON, true},
		{"content matters", uid(strings.Replace(m, "image: i", "image: j", 1), "file", "/etc/pods/web.yaml", "node1"), false},
		{"node matters", uid(m, "file", "/etc/pods/web.yaml", "node2"), false},
		{"origin matters", uid(m, "file", "/etc/pods/other.yaml", "node1"), false},
		{"source matters", uid(m, "http", "/etc/pods/web.yaml", "node1"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if (tc.got == base) != tc.same {
				t.Errorf("uid %q vs %q, same = %v", tc.got, base, tc.same)
			}
		})
	}

	pod := decode("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: kube-system\n  uid: given\nspec:\n  containers:\n  - {name: c, image: i}\n")
	if err := ApplyStaticPodDefaults(pod, podmanager.FileSource, "x", "Node-A"); err != nil {
		t.Fatal(err)
	}
	if pod.UID != "given" || pod.Name != "web-node-a" || pod.Namespace != "kube-system" || pod.Spec.NodeName != "Node-A" ||
		podmanager.PodHash(pod) != "given" || pod.Status.Phase != v1.PodPending || len(pod.Spec.Tolerations) != 1 {
		t.Errorf("defaulted pod: %+v", pod)
	}
	// Idempotent toleration.
	pod.Name = "web"
	if err := ApplyStaticPodDefaults(pod, podmanager.FileSource, "x", "Node-A"); err != nil || len(pod.Spec.Tolerations) != 1 {
		t.Errorf("tolerations after a second defaulting: %v", pod.Spec.Tolerations)
	}
}

// FuzzDecodeManifest feeds arbitrary bytes through everything a file source
// does with a manifest: decode, default, validate. Nothing may panic, and a
// pod that passes must be usable by the merge.
func FuzzDecodeManifest(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "manifests", "*"))
	for _, path := range seeds {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(podList))
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: &a x\n  namespace: *a\n"))
	f.Add([]byte("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"limits\":{\"cpu\":\"1e400\"}}}]}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pod, err := staticPodFromManifest(data, podmanager.FileSource, "fuzz.yaml", "node1")
		if err != nil {
			var known bool
			for _, class := range []error{ErrDecode, ErrNotPod, ErrInvalidPod} {
				known = known || errors.Is(err, class)
			}
			if !known {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		if pod.UID == "" || podmanager.PodHash(pod) != string(pod.UID) || len(pod.Spec.Containers) == 0 {
			t.Fatalf("accepted pod is incomplete: %+v", pod)
		}
		_, _ = DecodePods(data)
		s := &snapshot{}
		s.merge("file", []*v1.Pod{pod}, t0, func(string, error) {})
	})
}

func ptr[T any](v T) *T { return &v }
