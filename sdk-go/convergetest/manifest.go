package convergetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/encoding/protojson"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// Manifest is a kind manifest, as a test reads it: the kind version, its
// reactions and schemas. Read one with [ReadManifest], [ReadManifests] or
// [ParseManifests], or wrap one built in Go with [NewManifest].
type Manifest struct {
	m        *convergev1.KindManifest
	validate SchemaValidator
}

// SchemaValidator checks a JSON document against a JSON Schema (2020-12,
// as the server reads it); see [ValidateWith].
type SchemaValidator func(schema, document json.RawMessage) error

// Kind is the manifest's kind.
func (m *Manifest) Kind() string { return m.m.GetKind() }

// Version is the manifest's kind version.
func (m *Manifest) Version() int { return int(m.m.GetKindVersion()) }

// Proto returns the manifest as the API carries it. Do not modify it.
func (m *Manifest) Proto() *convergev1.KindManifest { return m.m }

// reaction returns the manifest's reaction named name.
func (m *Manifest) reaction(name string) (*convergev1.Reaction, error) {
	var names []string
	for _, r := range m.m.GetReactions() {
		if r.GetName() == name {
			return r, nil
		}
		names = append(names, fmt.Sprintf("%q", r.GetName()))
	}
	return nil, fmt.Errorf("kind %s v%d has no reaction %q; it has %s", m.Kind(), m.Version(), name, strings.Join(names, ", "))
}

// check validates doc against one of the manifest's schemas (named by
// field, e.g. "spec_schema"), when a validator is set and the schema is.
func (m *Manifest) check(field string, schema json.RawMessage, doc []byte) error {
	if m.validate == nil || len(schema) == 0 || len(doc) == 0 {
		return nil
	}
	if err := m.validate(schema, doc); err != nil {
		return fmt.Errorf("%s of kind %s v%d refuses %s: %w", field, m.Kind(), m.Version(), doc, err)
	}
	return nil
}

// ValidateSpec checks spec against the manifest's spec_schema, with the
// validator set by [ValidateWith]. Without a validator, or a spec_schema,
// any spec passes.
func (m *Manifest) ValidateSpec(spec json.RawMessage) error {
	return m.check("spec_schema", schemaJSON(m.m.GetSpecSchema()), spec)
}

// ValidateStatus checks status (a handler's, e.g. [converge.Outcome]'s
// Status) against the manifest's status_schema, with the validator set by
// [ValidateWith]. Without a validator, or a status_schema, any status
// passes.
func (m *Manifest) ValidateStatus(status json.RawMessage) error {
	return m.check("status_schema", schemaJSON(m.m.GetStatusSchema()), status)
}

// NewManifest wraps a manifest built in Go, after checking its fields'
// formats as the server does first (names, versions, the trigger and
// emits vocabularies). The legality rules (M1–M27) are the server's.
func NewManifest(m *convergev1.KindManifest, opts ...ManifestOption) (*Manifest, error) {
	var o manifestOptions
	for _, opt := range opts {
		opt(&o)
	}
	if err := protovalidate.Validate(m); err != nil {
		return nil, fmt.Errorf("manifest %s v%d: %w", m.GetKind(), m.GetKindVersion(), err)
	}
	return &Manifest{m: m, validate: o.validate}, nil
}

// ManifestOption configures how manifests are read.
type ManifestOption func(*manifestOptions)

type manifestOptions struct {
	yaml     func([]byte, any) error
	validate SchemaValidator
}

// YAML reads manifests written in YAML, decoding each document with
// unmarshal: the SDK has no YAML parser of its own (it keeps its
// dependencies to connect and protobuf), so pass the one your tests use,
// e.g. yaml.Unmarshal from go.yaml.in/yaml/v3 or sigs.k8s.io/yaml. The
// documents are split at lines starting with "---".
func YAML(unmarshal func(data []byte, v any) error) ManifestOption {
	return func(o *manifestOptions) { o.yaml = unmarshal }
}

// ValidateWith has [NewTask] check a task's spec, config and operation
// input against the manifest's spec_schema, config_schema and the verb's
// input_schema, and [Manifest.ValidateSpec] and [Manifest.ValidateStatus]
// check what a test gives them. The SDK has no JSON Schema validator of
// its own: pass one built on the library your tests use (the server uses
// github.com/santhosh-tekuri/jsonschema/v6, draft 2020-12, asserting
// formats). Without it, nothing is checked against the schemas.
func ValidateWith(v SchemaValidator) ManifestOption {
	return func(o *manifestOptions) { o.validate = v }
}

// ParseManifests reads the kind manifests in data: JSON by default (one
// object, a stream of them, or arrays of them, as conctl apply reads), or
// YAML documents with the [YAML] option. Documents with a "type" other
// than "manifest" (resources, say) are skipped; the "type" key itself is
// optional. Unknown fields are errors, naming the document.
func ParseManifests(data []byte, opts ...ManifestOption) ([]*Manifest, error) {
	var o manifestOptions
	for _, opt := range opts {
		opt(&o)
	}
	docs, err := documents(data, o.yaml)
	if err != nil {
		return nil, err
	}
	var out []*Manifest
	for i, doc := range docs {
		m, err := parseManifest(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if m == nil {
			continue
		}
		mf, err := NewManifest(m, opts...)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		out = append(out, mf)
	}
	return out, nil
}

// ReadManifests reads the kind manifests in the file at path, as
// [ParseManifests] does, failing t if it cannot.
func ReadManifests(t testing.TB, path string, opts ...ManifestOption) Manifests {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("convergetest: %v", err)
	}
	ms, err := ParseManifests(data, opts...)
	if err != nil {
		t.Fatalf("convergetest: %s: %v", path, err)
	}
	if len(ms) == 0 {
		t.Fatalf("convergetest: %s holds no kind manifest", path)
	}
	return ms
}

// ReadManifest reads the one kind manifest in the file at path, failing t
// if there is not exactly one.
func ReadManifest(t testing.TB, path string, opts ...ManifestOption) *Manifest {
	t.Helper()
	ms := ReadManifests(t, path, opts...)
	if len(ms) != 1 {
		t.Fatalf("convergetest: %s holds %d kind manifests; use ReadManifests and Manifests.Get", path, len(ms))
	}
	return ms[0]
}

// Manifests are several kind manifests, e.g. a file's.
type Manifests []*Manifest

// Get returns the manifest of kind at version, or, for version 0, the
// only manifest of kind; it fails t if there is no such manifest.
func (ms Manifests) Get(t testing.TB, kind string, version int) *Manifest {
	t.Helper()
	var found []*Manifest
	var have []string
	for _, m := range ms {
		have = append(have, fmt.Sprintf("%s v%d", m.Kind(), m.Version()))
		if m.Kind() == kind && (version == 0 || m.Version() == version) {
			found = append(found, m)
		}
	}
	switch {
	case len(found) == 1:
		return found[0]
	case len(found) > 1:
		t.Fatalf("convergetest: %d manifests of kind %s; name the version", len(found), kind)
	default:
		t.Fatalf("convergetest: no manifest of kind %s (version %d) among %s", kind, version, strings.Join(have, ", "))
	}
	return nil
}

// documents splits data into its documents, as JSON.
func documents(data []byte, yaml func([]byte, any) error) ([]json.RawMessage, error) {
	if yaml != nil {
		return yamlDocuments(data, yaml)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var docs []json.RawMessage
	for {
		var v json.RawMessage
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			return docs, nil
		} else if err != nil {
			return nil, fmt.Errorf("not JSON (for YAML, pass the YAML option): %w", err)
		}
		if v[0] != '[' {
			docs = append(docs, v)
			continue
		}
		var list []json.RawMessage
		if err := json.Unmarshal(v, &list); err != nil {
			return nil, err
		}
		docs = append(docs, list...)
	}
}

var yamlSeparator = regexp.MustCompile(`(?m)^---.*$`)

func yamlDocuments(data []byte, unmarshal func([]byte, any) error) ([]json.RawMessage, error) {
	var docs []json.RawMessage
	for i, part := range yamlSeparator.Split(string(data), -1) {
		var v any
		if err := unmarshal([]byte(part), &v); err != nil {
			return nil, fmt.Errorf("YAML document %d: %w", i+1, err)
		}
		if v == nil {
			continue // empty, or only comments
		}
		doc, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("YAML document %d: %w", i+1, err)
		}
		docs = append(docs, doc)
	}
	return docs, nil
}

// parseManifest reads one document; nil for a document of another type.
func parseManifest(doc json.RawMessage) (*convergev1.KindManifest, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(doc, &fields); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if raw, ok := fields["type"]; ok {
		var typ string
		if err := json.Unmarshal(raw, &typ); err != nil {
			return nil, fmt.Errorf("type: %w", err)
		}
		if typ != "manifest" {
			return nil, nil
		}
		delete(fields, "type")
	}
	body, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	m := &convergev1.KindManifest{}
	if err := protojson.Unmarshal(body, m); err != nil {
		// The position is in the document as re-encoded, not as written.
		return nil, errors.New(protojsonPosition.ReplaceAllString(err.Error(), ""))
	}
	return m, nil
}

var protojsonPosition = regexp.MustCompile(`^proto:[\s\x{00a0}]*(\(line \d+:\d+\):[\s\x{00a0}]*)?`)
