package cri

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// listFixtures: list responses with every field set, labels and annotations
// GetPods reads and others, and empty values.
func listFixtures() (*runtimeapi.ListPodSandboxResponse, *runtimeapi.ListContainersResponse) {
	sbs := &runtimeapi.ListPodSandboxResponse{Items: []*runtimeapi.PodSandbox{
		{
			Id:        "sb1",
			Metadata:  &runtimeapi.PodSandboxMetadata{Name: "p", Uid: "u1", Namespace: "ns", Attempt: 2},
			State:     runtimeapi.PodSandboxState_SANDBOX_NOTREADY,
			CreatedAt: 1_700_000_000_123_456_789,
			Labels: map[string]string{LabelPodUID: "u1", LabelPodName: "p", LabelPodNamespace: "ns",
				"app": "web", LabelContainerName: "not-on-a-sandbox"},
			Annotations:    map[string]string{"kubernetes.io/config.source": "api", AnnotationContainerHash: "ff"},
			RuntimeHandler: "runc",
		},
		{Id: "sb2", State: runtimeapi.PodSandboxState_SANDBOX_READY}, // no metadata, no labels
		{},
	}}
	cs := &runtimeapi.ListContainersResponse{Containers: []*runtimeapi.Container{
		{
			Id:           "c1",
			PodSandboxId: "sb1",
			Metadata:     &runtimeapi.ContainerMetadata{Name: "main", Attempt: 3},
			Image:        &runtimeapi.ImageSpec{Image: "img:1", Annotations: map[string]string{"x": "y"}, UserSpecifiedImage: "img", RuntimeHandler: "h"},
			ImageRef:     "sha256:abc",
			State:        runtimeapi.ContainerState_CONTAINER_EXITED,
			CreatedAt:    42,
			Labels: map[string]string{LabelPodUID: "u1", LabelPodName: "p", LabelPodNamespace: "ns",
				LabelContainerName: "main", "team": "a"},
			Annotations: map[string]string{AnnotationContainerHash: "1a2b", AnnotationContainerRestartCount: "3",
				AnnotationTerminationMessagePath: "/dev/termination-log"},
			ImageId: "sha256:def",
		},
		{Id: "c2", PodSandboxId: "sb2", State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		{},
	}}
	return sbs, cs
}

// trimmed is what listCodec keeps of a response: the full message minus
// the labels and annotations GetPods does not read, the image's other
// fields and image_id.
func trimmed(m proto.Message) proto.Message {
	m = proto.Clone(m)
	keep := func(mp map[string]string, kept func([]byte) (string, bool)) map[string]string {
		var out map[string]string
		for k, v := range mp {
			if _, ok := kept([]byte(k)); ok {
				if out == nil {
					out = map[string]string{}
				}
				out[k] = v
			}
		}
		return out
	}
	m.ProtoReflect().SetUnknown(nil)
	switch m := m.(type) {
	case *runtimeapi.ListPodSandboxResponse:
		for _, sb := range m.Items {
			sb.ProtoReflect().SetUnknown(nil)
			sb.Labels = keep(sb.Labels, sandboxLabelKept)
			sb.Annotations = nil
		}
	case *runtimeapi.ListContainersResponse:
		for _, c := range m.Containers {
			c.ProtoReflect().SetUnknown(nil)
			c.Labels = keep(c.Labels, containerLabelKept)
			c.Annotations = keep(c.Annotations, containerAnnotationKept)
			if c.Image != nil {
				c.Image = &runtimeapi.ImageSpec{Image: c.Image.Image}
			}
			c.ImageId = ""
		}
	}
	return m
}

func TestListCodecKeepsWhatGetPodsReads(t *testing.T) {
	sbs, cs := listFixtures()
	for _, tc := range []struct {
		name string
		in   proto.Message
		out  proto.Message
	}{
		{"sandboxes", sbs, &runtimeapi.ListPodSandboxResponse{}},
		{"containers", cs, &runtimeapi.ListContainersResponse{}},
		{"empty sandbox list", &runtimeapi.ListPodSandboxResponse{}, &runtimeapi.ListPodSandboxResponse{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := proto.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if err := (listCodec{}).Unmarshal(b, tc.out); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(trimmed(tc.in), tc.out, protocmp.Transform()); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
		})
	}
	// Other messages are decoded in full.
	v := &runtimeapi.VersionResponse{RuntimeName: "x", RuntimeApiVersion: "v1"}
	b, _ := proto.Marshal(v)
	got := &runtimeapi.VersionResponse{}
	if err := (listCodec{}).Unmarshal(b, got); err != nil || !proto.Equal(v, got) {
		t.Errorf("VersionResponse: %v, %v", got, err)
	}
	// Truncated input is an error, not a panic.
	b, _ = proto.Marshal(cs)
	for i := range b {
		_ = (listCodec{}).Unmarshal(b[:i], &runtimeapi.ListContainersResponse{})
	}
	if err := (listCodec{}).Unmarshal(b[:len(b)-1], &runtimeapi.ListContainersResponse{}); err == nil {
		t.Error("a truncated message decoded without error")
	}
}

// FuzzListCodec: on any input listCodec does not panic, and whenever the
// generic decoder accepts a message, listCodec decodes exactly its trimmed
// form.
func FuzzListCodec(f *testing.F) {
	sbs, cs := listFixtures()
	for _, m := range []proto.Message{sbs, cs} {
		b, _ := proto.Marshal(m)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, mk := range []func() proto.Message{
			func() proto.Message { return &runtimeapi.ListPodSandboxResponse{} },
			func() proto.Message { return &runtimeapi.ListContainersResponse{} },
		} {
			full, lean := mk(), mk()
			leanErr := (listCodec{}).Unmarshal(b, lean)
			if err := proto.Unmarshal(b, full); err != nil {
				continue
			}
			if leanErr != nil {
				t.Fatalf("generic decoder accepts, listCodec says %v", leanErr)
			}
			if diff := cmp.Diff(trimmed(full), lean, protocmp.Transform()); diff != "" {
				t.Fatalf("decoded (-want +got):\n%s", diff)
			}
		}
	})
}
