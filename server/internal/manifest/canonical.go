package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// Canonical returns the manifest as deterministic JSON: proto field names,
// object keys sorted, no insignificant whitespace, and without the
// output-only fields (revision, created_at, updated_at). The same manifest
// always encodes to the same bytes, whatever the order of its Struct maps,
// which is how the server tells an unchanged re-apply from a change.
//
// protojson alone is not enough: its output is documented as unstable and
// deliberately varies whitespace, so its bytes cannot be compared.
func Canonical(m *convergev1.KindManifest) ([]byte, error) {
	if m == nil {
		return nil, errors.New("manifest: missing")
	}
	m = proto.CloneOf(m)
	m.Revision, m.CreatedAt, m.UpdatedAt = 0, nil, nil
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("manifest: encode: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep numbers exactly as protojson wrote them
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("manifest: re-read encoding: %w", err)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // encoding/json sorts map keys
		return nil, fmt.Errorf("manifest: encode: %w", err)
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// FromCanonical decodes a manifest written by Canonical. Unknown fields
// are an error, so a stored manifest never silently loses data.
func FromCanonical(data []byte) (*convergev1.KindManifest, error) {
	m := &convergev1.KindManifest{}
	if err := protojson.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("manifest: decode: %w", err)
	}
	return m, nil
}
