package bench

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

func TestParseClusterVolumes(t *testing.T) {
	for _, v := range []ClusterVolumes{VolumesNone, VolumesToken, VolumesPerPod, VolumesShared} {
		got, err := ParseClusterVolumes(v.String())
		if err != nil || got != v {
			t.Errorf("ParseClusterVolumes(%q) = %v, %v; want %v", v.String(), got, err, v)
		}
	}
	if _, err := ParseClusterVolumes("perpod"); err == nil {
		t.Error("ParseClusterVolumes(perpod): no error")
	}
}

func TestClusterPod(t *testing.T) {
	type shape struct {
		Automount bool
		Volumes   map[string]string // volume name → "configmap NAME" or "secret NAME"
		Mounts    []string
	}
	objects := func(name string) shape {
		return shape{Automount: true,
			Volumes: map[string]string{"config": "configmap " + name, "secret": "secret " + name},
			Mounts:  []string{"config /etc/bench/config ro", "secret /etc/bench/secret ro"}}
	}
	for _, tc := range []struct {
		vols ClusterVolumes
		want shape
	}{
		{VolumesNone, shape{Automount: false}},
		{VolumesToken, shape{Automount: true}},
		{VolumesPerPod, objects("bench-7")},
		{VolumesShared, objects("bench-shared")},
	} {
		t.Run(tc.vols.String(), func(t *testing.T) {
			p := clusterPod("bench-7", "node-a", "img", 2, tc.vols)
			if p.Spec.NodeName != "node-a" || *p.Spec.TerminationGracePeriodSeconds != 2 || len(p.Spec.Containers) != 1 {
				t.Fatalf("pod spec: %+v", p.Spec)
			}
			var got shape
			got.Automount = p.Spec.AutomountServiceAccountToken != nil && *p.Spec.AutomountServiceAccountToken
			for _, v := range p.Spec.Volumes {
				if got.Volumes == nil {
					got.Volumes = map[string]string{}
				}
				switch {
				case v.ConfigMap != nil:
					got.Volumes[v.Name] = "configmap " + v.ConfigMap.Name
				case v.Secret != nil:
					got.Volumes[v.Name] = "secret " + v.Secret.SecretName
				default:
					got.Volumes[v.Name] = "other"
				}
			}
			for _, m := range p.Spec.Containers[0].VolumeMounts {
				s := m.Name + " " + m.MountPath
				if m.ReadOnly {
					s += " ro"
				}
				got.Mounts = append(got.Mounts, s)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("pod (-want +got):\n%s", d)
			}
			if hasTokenVolume(p) {
				t.Error("the workload's pod has a token volume of its own; the admission adds it")
			}
		})
	}
}

func TestHasTokenVolume(t *testing.T) {
	admitted := clusterPod("p", "n", "img", 2, VolumesToken)
	admitted.Spec.Volumes = append(admitted.Spec.Volumes, v1.Volume{Name: "kube-api-access-x7k2q",
		VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}})
	if !hasTokenVolume(admitted) {
		t.Error("kube-api-access-x7k2q not seen")
	}
	named := clusterPod("p", "n", "img", 2, VolumesNone)
	named.Spec.Volumes = append(named.Spec.Volumes, v1.Volume{Name: "kube-api-access-x7k2q",
		VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	if hasTokenVolume(named) {
		t.Error("an emptyDir named kube-api-access-* counted as the token volume")
	}
}

func TestObjectNames(t *testing.T) {
	pods := []string{"bench-0", "bench-1"}
	for _, tc := range []struct {
		vols ClusterVolumes
		want []string
	}{
		{VolumesNone, nil},
		{VolumesToken, nil},
		{VolumesPerPod, pods},
		{VolumesShared, []string{"bench-shared"}},
	} {
		if d := cmp.Diff(tc.want, tc.vols.objectNames(pods)); d != "" {
			t.Errorf("%s: objectNames (-want +got):\n%s", tc.vols, d)
		}
	}
}

func TestCountVolumeRequests(t *testing.T) {
	counts := map[string]int{
		"create serviceaccounts/token": 300,
		"get serviceaccounts":          1,
		"watch configmaps":             301,
		"list configmaps":              2,
		"get configmaps":               3,
		"watch secrets":                300,
		"get secrets":                  5,
		"patch pods/status":            600,
		"create events":                40,
		"get /healthz":                 1,
		"nonsense":                     9,
	}
	want := VolumeRequests{Tokens: 300,
		ConfigMaps: ObjectReads{Get: 3, List: 2, Watch: 301},
		Secrets:    ObjectReads{Get: 5, Watch: 300}}
	got := CountVolumeRequests(counts)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("CountVolumeRequests (-want +got):\n%s", d)
	}
	if got.ConfigMaps.Total() != 306 {
		t.Errorf("ConfigMaps.Total() = %d, want 306", got.ConfigMaps.Total())
	}
}
