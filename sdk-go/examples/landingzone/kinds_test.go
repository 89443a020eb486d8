package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/convergehq/converge/sdk-go/converge"
)

// manifest is what these tests read of a kind manifest in kinds.yaml.
type manifest struct {
	Kind        string `json:"kind"`
	KindVersion int    `json:"kind_version"`
	Reactions   []struct {
		Name    string   `json:"name"`
		Trigger string   `json:"trigger"`
		Emits   []string `json:"emits"`
	} `json:"reactions"`
	SpecSchema   json.RawMessage `json:"spec_schema"`
	StatusSchema json.RawMessage `json:"status_schema"`

	spec, status *jsonschema.Schema
}

// readDocuments returns the YAML documents of a file, as JSON.
func readDocuments(t *testing.T, path string) []json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []json.RawMessage
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return docs
		} else if err != nil {
			t.Fatalf("%s: document %d: %v", path, len(docs)+1, err)
		}
		raw, err := json.Marshal(doc)
		if err != nil {
			t.Fatalf("%s: document %d: %v", path, len(docs)+1, err)
		}
		docs = append(docs, raw)
	}
}

// compileSchema compiles a JSON Schema 2020-12 document, asserting formats
// as the server does.
func compileSchema(t *testing.T, name string, doc json.RawMessage) *jsonschema.Schema {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(name, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	s, err := c.Compile(name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

// loadKinds reads kinds.yaml, keyed by kind.
func loadKinds(t *testing.T) map[string]*manifest {
	t.Helper()
	kinds := map[string]*manifest{}
	for i, raw := range readDocuments(t, "kinds.yaml") {
		var m manifest
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("kinds.yaml: document %d: %v", i+1, err)
		}
		m.spec = compileSchema(t, m.Kind+".spec_schema", m.SpecSchema)
		m.status = compileSchema(t, m.Kind+".status_schema", m.StatusSchema)
		kinds[m.Kind] = &m
	}
	return kinds
}

// validate checks v, encoded as JSON, against s.
func validate(t *testing.T, what string, s *jsonschema.Schema, v any) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := s.Validate(inst); err != nil {
		t.Errorf("%s %s does not match its schema: %v", what, raw, err)
	}
}

func TestKindsDeclareTheServedReactions(t *testing.T) {
	kinds := loadKinds(t)
	h := &handlers{}
	served := h.reactions()
	if len(kinds) != len(served) {
		t.Errorf("kinds.yaml declares %d kinds; the worker serves %d", len(kinds), len(served))
	}
	for _, r := range served {
		m := kinds[r.kind]
		if m == nil {
			t.Errorf("kinds.yaml does not declare kind %s", r.kind)
			continue
		}
		if m.KindVersion != kindVersion || len(m.Reactions) != 1 || m.Reactions[0].Name != r.name || m.Reactions[0].Trigger != "specChange" {
			t.Errorf("kind %s: version %d, reactions %+v; want version %d with one specChange reaction %q",
				r.kind, m.KindVersion, m.Reactions, kindVersion, r.name)
		}
	}
	wantEmits := map[string][]string{
		kindZone: {"children", "edges", "status"}, kindAccount: {"status"}, kindVPC: {"status"}, kindRoute: {"status"},
	}
	for kind, want := range wantEmits {
		if m := kinds[kind]; m != nil && len(m.Reactions) == 1 && !slices.Equal(m.Reactions[0].Emits, want) {
			t.Errorf("kind %s emits %v; want %v", kind, m.Reactions[0].Emits, want)
		}
	}
}

func TestSchemasRefuseWhatTheyShould(t *testing.T) {
	kinds := loadKinds(t)
	for _, c := range []struct {
		kind, doc string
	}{
		{kindZone, `{"prefix":"-demo","accounts":3}`},
		{kindZone, `{"prefix":"demo","accounts":0}`},
		{kindZone, `{"prefix":"demo","accounts":10001}`},
		{kindZone, `{"prefix":"demo","accounts":3,"vpc_cidr":"10.0.0.0"}`},
		{kindZone, `{"prefix":"demo","accounts":3,"region":"x"}`},
		{kindZone, `{"accounts":3}`},
		{kindAccount, `{"email":"not-an-email","index":0}`},
	} {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(c.doc))
		if err != nil {
			t.Fatal(err)
		}
		if kinds[c.kind].spec.Validate(inst) == nil {
			t.Errorf("the spec_schema of %s accepts %s", c.kind, c.doc)
		}
	}
}

// A simulated engine: apply zone.yaml's landing zone, run its composer,
// then run every child once its dependencies have run, flowing values
// along the edges as the server does. Every spec and status on the way
// must match its kind's schemas.
func TestLandingZoneConvergesInASimulatedEngine(t *testing.T) {
	kinds := loadKinds(t)
	h := &handlers{}
	served := map[string]converge.HandlerFunc{}
	for _, r := range h.reactions() {
		served[r.kind] = r.handler
	}

	docs := readDocuments(t, "zone.yaml")
	if len(docs) != 1 {
		t.Fatalf("zone.yaml holds %d documents; want 1", len(docs))
	}
	var zone struct {
		Type        string          `json:"type"`
		Kind        string          `json:"kind"`
		KindVersion int             `json:"kind_version"`
		Name        string          `json:"name"`
		Spec        json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(docs[0], &zone); err != nil {
		t.Fatal(err)
	}
	if zone.Type != "resource" || zone.Kind != kindZone || zone.KindVersion != kindVersion || zone.Name != "demo" {
		t.Fatalf("zone.yaml holds %s %s v%d %q; want resource landingzone v1 \"demo\"", zone.Type, zone.Kind, zone.KindVersion, zone.Name)
	}
	validate(t, "zone spec", kinds[kindZone].spec, zone.Spec)

	ctx := context.Background()
	res, err := served[kindZone](ctx, &converge.Task{Kind: kindZone, KindVersion: 1, Namespace: "default", Name: zone.Name, Spec: zone.Spec})
	if err != nil {
		t.Fatal(err)
	}
	validate(t, "zone status", kinds[kindZone].status, res.Status)
	if len(res.Children) != 9 || len(res.Edges) != 6 {
		t.Fatalf("demo composed %d children and %d edges; want 9 and 6", len(res.Children), len(res.Edges))
	}

	incoming := map[converge.Ref][]converge.Edge{}
	for _, e := range res.Edges {
		incoming[e.Dependent] = append(incoming[e.Dependent], e)
	}
	statuses := map[converge.Ref]map[string]any{}
	// Children run in the order emitted, which puts every dependency first.
	for _, c := range res.Children {
		m := kinds[c.Kind]
		if m == nil || m.KindVersion != c.KindVersion {
			t.Fatalf("child %s: kind %s v%d is not in kinds.yaml", c.Name, c.Kind, c.KindVersion)
		}
		validate(t, "composed spec of "+c.Name, m.spec, c.Spec)
		spec := asObject(t, c.Spec)
		for _, e := range incoming[c.Ref()] {
			upstream, ok := statuses[e.Dependency]
			if !ok {
				t.Fatalf("child %s runs before its dependency %s", c.Name, e.Dependency.Name)
			}
			for _, f := range e.Flows {
				spec[strings.TrimPrefix(f.To, "/")] = upstream[strings.TrimPrefix(f.From, "/")]
			}
		}
		validate(t, "flowed spec of "+c.Name, m.spec, spec)
		raw, _ := json.Marshal(spec)
		out, err := served[c.Kind](ctx, &converge.Task{Kind: c.Kind, KindVersion: c.KindVersion, Namespace: "default", Name: c.Name, Spec: raw})
		if err != nil {
			t.Fatalf("child %s: %v", c.Name, err)
		}
		validate(t, "status of "+c.Name, m.status, out.Status)
		statuses[c.Ref()] = asObject(t, out.Status)
	}

	for i := range 3 {
		acct := statuses[converge.RefTo(kindAccount, accountName("demo", i))]
		vpc := statuses[converge.RefTo(kindVPC, vpcName("demo", i))]
		route := statuses[converge.RefTo(kindRoute, routeName("demo", i))]
		if vpc["account_id"] != acct["account_id"] || vpc["vpc_id"] == "" || route["route_id"] == "" {
			t.Errorf("account %d: account %v, vpc %v, route %v; want the account's id in the VPC", i, acct, vpc, route)
		}
	}
}

// asObject round-trips v through JSON into a map.
func asObject(t *testing.T, v any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
