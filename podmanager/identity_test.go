package podmanager

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIdentity(t *testing.T) {
	pod := func(ann map[string]string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod", Annotations: ann}}
	}
	tests := []struct {
		name           string
		pod            *v1.Pod
		static, mirror bool
	}{
		{"nil", nil, false, false},
		{"no annotations", pod(nil), false, false},
		{"api", pod(map[string]string{ConfigSourceAnnotationKey: APISource}), false, false},
		{"file", pod(map[string]string{ConfigSourceAnnotationKey: FileSource}), true, false},
		{"http", pod(map[string]string{ConfigSourceAnnotationKey: HTTPSource}), true, false},
		{"mirror", pod(map[string]string{ConfigSourceAnnotationKey: APISource, ConfigMirrorAnnotationKey: "abc"}), false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsStaticPod(tc.pod); got != tc.static {
				t.Errorf("IsStaticPod = %v, want %v", got, tc.static)
			}
			if got := IsMirrorPod(tc.pod); got != tc.mirror {
				t.Errorf("IsMirrorPod = %v, want %v", got, tc.mirror)
			}
		})
	}
}

func TestFullName(t *testing.T) {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod"}}
	if got := FullName(p); got != "web_prod" {
		t.Fatalf("FullName = %q", got)
	}
	name, ns, err := ParseFullName("web_prod")
	if err != nil || name != "web" || ns != "prod" {
		t.Fatalf("ParseFullName = %q %q %v", name, ns, err)
	}
	for _, bad := range []string{"", "web", "_prod", "web_", "a_b_c"} {
		if _, _, err := ParseFullName(bad); err == nil {
			t.Errorf("ParseFullName(%q): want error", bad)
		}
	}
}
