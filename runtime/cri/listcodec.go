package cri

import (
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The full listing of GetPods is the adapter's largest answer: every sandbox
// and container with all their labels and annotations, about 0.5 KiB per
// container. Decoded by the generic protobuf code, every map entry costs
// several allocations (reflection), about 200 per pod of one sandbox and
// two containers. listCodec decodes the two list responses by hand and keeps
// only the fields and the labels and annotations that GetPods reads;
// everything else is skipped without allocating. It is used for GetPods'
// two calls only (see listOption): other callers of the list calls get the
// full messages.

// The map keys GetPods reads (labels.go, convert.go); other entries are
// dropped. Each returns the key as a constant (no allocation) and whether
// it is kept.

func sandboxLabelKept(key []byte) (string, bool) {
	switch string(key) {
	case LabelPodUID:
		return LabelPodUID, true
	case LabelPodName:
		return LabelPodName, true
	case LabelPodNamespace:
		return LabelPodNamespace, true
	}
	return "", false
}

func containerLabelKept(key []byte) (string, bool) {
	if k, ok := sandboxLabelKept(key); ok {
		return k, true
	}
	if string(key) == LabelContainerName {
		return LabelContainerName, true
	}
	return "", false
}

func containerAnnotationKept(key []byte) (string, bool) {
	if string(key) == AnnotationContainerHash {
		return AnnotationContainerHash, true
	}
	return "", false
}

// listCodec is a grpc codec (the "proto" content subtype) whose Unmarshal
// decodes ListPodSandboxResponse and ListContainersResponse partially.
type listCodec struct{}

// listOption makes a call use listCodec.
func listOption() grpc.CallOption { return grpc.ForceCodec(listCodec{}) }

func (listCodec) Name() string { return "proto" }

func (listCodec) Marshal(v any) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("list codec: cannot marshal %T", v)
	}
	return proto.Marshal(m)
}

func (listCodec) Unmarshal(data []byte, v any) error {
	switch m := v.(type) {
	case *runtimeapi.ListPodSandboxResponse:
		return decodeRepeated(data, func(b []byte) error {
			sb, err := decodeSandbox(b)
			m.Items = append(m.Items, sb)
			return err
		})
	case *runtimeapi.ListContainersResponse:
		return decodeRepeated(data, func(b []byte) error {
			c, err := decodeContainer(b)
			m.Containers = append(m.Containers, c)
			return err
		})
	case proto.Message:
		return proto.Unmarshal(data, m)
	default:
		return fmt.Errorf("list codec: cannot unmarshal into %T", v)
	}
}

var errMalformed = errors.New("list codec: malformed message")

// fields walks the fields of one message, calling f with each field's
// number, type and value (the varint, or the bytes of a length-delimited
// field); other wire types are skipped.
func fields(b []byte, f func(num protowire.Number, typ protowire.Type, v uint64, bytes []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errMalformed
		}
		b = b[n:]
		switch typ {
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return errMalformed
			}
			b = b[n:]
			if err := f(num, typ, v, nil); err != nil {
				return err
			}
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return errMalformed
			}
			b = b[n:]
			if err := f(num, typ, 0, v); err != nil {
				return err
			}
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return errMalformed
			}
			b = b[n:]
		}
	}
	return nil
}

// decodeRepeated calls item with every field 1 (the repeated message of
// both list responses).
func decodeRepeated(b []byte, item func([]byte) error) error {
	return fields(b, func(num protowire.Number, typ protowire.Type, _ uint64, v []byte) error {
		if num == 1 && typ == protowire.BytesType {
			return item(v)
		}
		return nil
	})
}

// mapEntry adds a map entry to *m when kept accepts its key.
func mapEntry(b []byte, m *map[string]string, kept func([]byte) (string, bool)) error {
	var key, value []byte
	err := fields(b, func(num protowire.Number, typ protowire.Type, _ uint64, v []byte) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			key = v
		case num == 2 && typ == protowire.BytesType:
			value = v
		}
		return nil
	})
	if err != nil {
		return err
	}
	if k, ok := kept(key); ok {
		if *m == nil {
			*m = make(map[string]string, 4)
		}
		(*m)[k] = string(value)
	}
	return nil
}

// decodeSandbox decodes a PodSandbox: id, metadata, state, created_at,
// runtime_handler and the labels GetPods reads; no annotations.
func decodeSandbox(b []byte) (*runtimeapi.PodSandbox, error) {
	sb := &runtimeapi.PodSandbox{}
	err := fields(b, func(num protowire.Number, typ protowire.Type, v uint64, bytes []byte) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			sb.Id = string(bytes)
		case num == 2 && typ == protowire.BytesType:
			if sb.Metadata == nil {
				sb.Metadata = &runtimeapi.PodSandboxMetadata{}
			}
			return proto.UnmarshalOptions{Merge: true}.Unmarshal(bytes, sb.Metadata) // a repeated message field merges
		case num == 3 && typ == protowire.VarintType:
			sb.State = runtimeapi.PodSandboxState(int32(v))
		case num == 4 && typ == protowire.VarintType:
			sb.CreatedAt = int64(v)
		case num == 5 && typ == protowire.BytesType:
			return mapEntry(bytes, &sb.Labels, sandboxLabelKept)
		case num == 7 && typ == protowire.BytesType:
			sb.RuntimeHandler = string(bytes)
		}
		return nil
	})
	return sb, err
}

// decodeContainer decodes a Container: id, pod_sandbox_id, metadata, the
// image name, image_ref, state, created_at and the labels and annotations
// GetPods reads.
func decodeContainer(b []byte) (*runtimeapi.Container, error) {
	c := &runtimeapi.Container{}
	err := fields(b, func(num protowire.Number, typ protowire.Type, v uint64, bytes []byte) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			c.Id = string(bytes)
		case num == 2 && typ == protowire.BytesType:
			c.PodSandboxId = string(bytes)
		case num == 3 && typ == protowire.BytesType:
			if c.Metadata == nil {
				c.Metadata = &runtimeapi.ContainerMetadata{}
			}
			return proto.UnmarshalOptions{Merge: true}.Unmarshal(bytes, c.Metadata)
		case num == 4 && typ == protowire.BytesType:
			if c.Image == nil {
				c.Image = &runtimeapi.ImageSpec{}
			}
			img := c.Image
			return fields(bytes, func(num protowire.Number, typ protowire.Type, _ uint64, v []byte) error {
				if num == 1 && typ == protowire.BytesType {
					img.Image = string(v)
				}
				return nil
			})
		case num == 5 && typ == protowire.BytesType:
			c.ImageRef = string(bytes)
		case num == 6 && typ == protowire.VarintType:
			c.State = runtimeapi.ContainerState(int32(v))
		case num == 7 && typ == protowire.VarintType:
			c.CreatedAt = int64(v)
		case num == 8 && typ == protowire.BytesType:
			return mapEntry(bytes, &c.Labels, containerLabelKept)
		case num == 9 && typ == protowire.BytesType:
			return mapEntry(bytes, &c.Annotations, containerAnnotationKept)
		}
		return nil
	})
	return c, err
}
