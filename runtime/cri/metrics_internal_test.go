package cri

import "testing"

func TestOperationType(t *testing.T) {
	for method, want := range map[string]string{
		"/runtime.v1.RuntimeService/RunPodSandbox":            "run_podsandbox",
		"/runtime.v1.RuntimeService/UpdateContainerResources": "update_container",
		"/runtime.v1.ImageService/ImageFsInfo":                "image_fs_info",
		"/runtime.v1.RuntimeService/GetContainerEvents":       "get_container_events", // not in the table
	} {
		if got := operationType(method); got != want {
			t.Errorf("operationType(%q) = %q, want %q", method, got, want)
		}
	}
}
