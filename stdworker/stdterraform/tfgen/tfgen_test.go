package tfgen

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convergehq/converge/stdworker/stdterraform"
)

const command = "stdworker kinds generate --provider hashicorp/time@0.14.2"

func timeSchemas(t *testing.T) *Schemas {
	t.Helper()
	raw, err := os.ReadFile("testdata/time-0.14.2.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSchemas(raw)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func timeOpts(version string) Options {
	return Options{Source: "hashicorp/time", Version: version, Owner: "tf-time", ResyncSeconds: 3600}
}

func TestGenerateTimeProvider(t *testing.T) {
	kinds, skipped, err := Generate(timeSchemas(t), timeOpts("0.14.2"))
	if err != nil || len(skipped) > 0 {
		t.Fatalf("Generate: %v, skipped %v", err, skipped)
	}
	var names []string
	for _, k := range kinds {
		names = append(names, k.Manifest.Kind)
		if err := checkLegal(k.Manifest); err != nil {
			t.Errorf("%s: %v", k.Manifest.Kind, err)
		}
	}
	if got := strings.Join(names, " "); got != "tf.time.offset tf.time.rotating tf.time.sleep tf.time.static" {
		t.Fatalf("kinds %s; want the four time resource types", got)
	}
	static := kinds[3].Manifest
	props := static.SpecSchema["properties"].(map[string]any)
	if _, ok := props["rfc3339"]; !ok {
		t.Errorf("spec has no rfc3339 (optional and computed): %v", props)
	}
	if _, ok := props["year"]; ok {
		t.Errorf("spec has year, which is computed only")
	}
	if _, ok := static.StatusSchema["properties"].(map[string]any)["year"]; !ok {
		t.Errorf("status has no year")
	}
	p, _ := static.Proto()
	b, err := stdterraform.BindingOf(p)
	if err != nil || b == nil || b.Type != "time_static" || b.Version != "0.14.2" {
		t.Errorf("binding %+v, %v; want time_static at 0.14.2", b, err)
	}
}

func TestKindName(t *testing.T) {
	for _, c := range []struct{ local, typ, want string }{
		{"time", "time_static", "tf.time.static"},
		{"aws", "aws_s3_bucket", "tf.aws.s3-bucket"},
		{"google-beta", "google_compute_instance", "tf.google-beta.google-compute-instance"},
		{"time", "time", "tf.time.time"},
	} {
		if got, err := KindName(c.local, c.typ); err != nil || got != c.want {
			t.Errorf("KindName(%q, %q) = %q, %v; want %q", c.local, c.typ, got, err, c.want)
		}
	}
	for _, typ := range []string{"time__x", "time_" + strings.Repeat("x", 60)} {
		if _, err := KindName("time", typ); err == nil {
			t.Errorf("KindName(time, %q): want an error", typ)
		}
	}
}

// TestGenerateSkipsUnmappable: a type the generator does not know skips
// only its resource type, naming the attribute.
func TestGenerateSkipsUnmappable(t *testing.T) {
	s := timeSchemas(t)
	p := s.ProviderSchemas["registry.terraform.io/hashicorp/time"]
	p.ResourceSchemas["time_sleep"].Block.Attributes["odd"] = &Attribute{Type: json.RawMessage(`["capsule","x"]`), Optional: true}
	p.ResourceSchemas["time_offset"].Block.BlockTypes = map[string]*BlockType{"window": {NestingMode: "list", MinItems: 3, MaxItems: 2, Block: &Block{}}}
	kinds, skipped, err := Generate(s, timeOpts("0.14.2"))
	if err != nil {
		t.Fatal(err)
	}
	if len(kinds) != 2 || len(skipped) != 2 {
		t.Fatalf("%d kinds, skipped %v; want 2 and 2", len(kinds), skipped)
	}
	if skipped[0].Type != "time_offset" || !strings.Contains(skipped[0].Why, "spec.window: min_items 3 is more than max_items 2") {
		t.Errorf("skipped[0] = %+v", skipped[0])
	}
	if skipped[1].Type != "time_sleep" || !strings.Contains(skipped[1].Why, `spec.odd: type kind "capsule"`) {
		t.Errorf("skipped[1] = %+v", skipped[1])
	}
}

func TestTypeSchemas(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`"string"`, `{"type":"string"}`},
		{`["list","number"]`, `{"items":{"type":"number"},"type":"array"}`},
		{`["map","bool"]`, `{"additionalProperties":{"type":"boolean"},"type":"object"}`},
		{`["object",{"a":"string","b":"number"},["b"]]`, `{"additionalProperties":false,"properties":{"a":{"type":"string"},"b":{"type":"number"}},"required":["a"],"type":"object"}`},
		{`["tuple",["string","bool"]]`, `{"items":false,"minItems":2,"prefixItems":[{"type":"string"},{"type":"boolean"}],"type":"array"}`},
		{`"dynamic"`, `{}`},
	} {
		got, err := typeSchema(json.RawMessage(c.in), "spec.x", 0)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if raw, _ := json.Marshal(got); string(raw) != c.want {
			t.Errorf("%s: %s; want %s", c.in, raw, c.want)
		}
	}
}

func TestBlocksAndSensitive(t *testing.T) {
	b := &Block{
		Attributes: map[string]*Attribute{
			"password": {Type: json.RawMessage(`"string"`), Required: true, Sensitive: true},
			"token":    {Type: json.RawMessage(`"string"`), Computed: true, Sensitive: true},
		},
		BlockTypes: map[string]*BlockType{"rule": {NestingMode: "list", MinItems: 1, MaxItems: 5, Block: &Block{
			Attributes: map[string]*Attribute{"name": {Type: json.RawMessage(`"string"`), Required: true}},
		}}},
	}
	spec, err := blockSchema(b, "", specSide, 0)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(spec)
	for _, want := range []string{`"password":{"type":"string","writeOnly":true}`, `"rule":{"items":`, `"maxItems":5,"minItems":1`, `"required":["password","rule"]`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("spec schema %s: want %s", raw, want)
		}
	}
	status, _ := blockSchema(b, "", statusSide, 0)
	if raw, _ := json.Marshal(status); strings.Contains(string(raw), "token") {
		t.Errorf("status schema %s holds the sensitive computed token", raw)
	}
}

// TestRegenerate: regenerating for a newer provider version edits a kind
// in place where the stability checker finds the change compatible, and
// writes the next version where it finds it breaking.
func TestRegenerate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tf-time")
	write := func(s *Schemas, version string) map[string]Outcome {
		t.Helper()
		kinds, _, err := Generate(s, timeOpts(version))
		if err != nil {
			t.Fatal(err)
		}
		outs, err := Write(dir, "tf-time", kinds, command)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]Outcome{}
		for _, o := range outs {
			m[o.Kind] = o
		}
		return m
	}
	first := write(timeSchemas(t), "0.14.2")
	if o := first["tf.time.static"]; o.Action != "created" || o.Version != 1 {
		t.Fatalf("first run: %v", o)
	}
	if o := write(timeSchemas(t), "0.14.2")["tf.time.static"]; o.Action != "unchanged" {
		t.Errorf("same schema again: %v; want unchanged", o)
	}

	next := timeSchemas(t)
	rs := next.ProviderSchemas["registry.terraform.io/hashicorp/time"].ResourceSchemas
	rs["time_static"].Block.Attributes["label"] = &Attribute{Type: json.RawMessage(`"string"`), Optional: true}
	rs["time_sleep"].Block.Attributes["reason"] = &Attribute{Type: json.RawMessage(`"string"`), Required: true}
	rs["time_offset"].Block.Attributes["offset_days"].Type = json.RawMessage(`"string"`)
	outs := write(next, "0.15.0")
	if o := outs["tf.time.static"]; o.Action != "updated" || o.Version != 1 {
		t.Errorf("a new optional argument: %v; want v1 updated in place", o)
	}
	if o := outs["tf.time.sleep"]; o.Action != "new version" || o.Version != 2 || !strings.Contains(strings.Join(o.Breaking, " "), "spec_schema") {
		t.Errorf("a new required argument: %v; want v2 with the breaking change", o)
	}
	if o := outs["tf.time.offset"]; o.Action != "new version" || o.Version != 2 {
		t.Errorf("a retyped argument: %v; want v2", o)
	}
	if o := outs["tf.time.rotating"]; o.Action != "updated" || o.Version != 1 {
		t.Errorf("only the provider version changed: %v; want v1 updated in place", o)
	}
	// Forbidding replacement is a compatible edit of the binding.
	forbid := timeOpts("0.15.0")
	forbid.ForbidReplace = true
	kinds, _, err := Generate(next, forbid)
	if err != nil {
		t.Fatal(err)
	}
	outs2, err := Write(dir, "tf-time", kinds, command)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs2 {
		if o.Action != "updated" {
			t.Errorf("--forbid-replace on a regeneration: %v; want the newest version updated in place", o)
		}
	}
	v1, _ := os.ReadFile(filepath.Join(dir, "tf.time.sleep", "v1.yaml"))
	v2, _ := os.ReadFile(filepath.Join(dir, "tf.time.sleep", "v2.yaml"))
	if !strings.Contains(string(v1), "version: 0.14.2") || !strings.Contains(string(v2), "version: 0.15.0") || !strings.Contains(string(v2), "kind_version: 2") {
		t.Errorf("v1 must keep 0.14.2 and v2 be 0.15.0:\n%s\n%s", v1, v2)
	}
	served, _ := os.ReadFile(filepath.Join(dir, "tf.time.sleep", "stdworker.yaml"))
	if !strings.Contains(string(served), "version: 2") {
		t.Errorf("stdworker.yaml does not serve v2:\n%s", served)
	}
}

func TestWriteRefusesAnotherTeamsDirectory(t *testing.T) {
	_, err := Write(filepath.Join(t.TempDir(), "apps"), "tf-time", nil, command)
	if err == nil || !strings.Contains(err.Error(), "--out") {
		t.Fatalf("Write into another team's directory: %v; want a refusal naming --out", err)
	}
}

func TestParseSchemasRefusals(t *testing.T) {
	for in, want := range map[string]string{
		`not json`:                 "not the JSON",
		`{}`:                       "format_version: missing",
		`{"format_version":"1.0"}`: "provider_schemas: empty",
		`{"format_version":"1.0","provider_schemas":{"a/b":{}}} {}`: "more than one",
	} {
		if _, err := ParseSchemas([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSchemas(%s): %v; want %q", in, err, want)
		}
	}
}

// TestCatalogIsGenerated: catalog/tf-time's generated kinds are what the
// generator writes today from the schema in testdata (the time provider
// 0.14.2's), so an edit by hand or a change of the generator shows here:
// regenerate with `stdworker kinds generate --provider hashicorp/time@0.14.2
// --out catalog/tf-time --owner tf-time`.
func TestCatalogIsGenerated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tf-time")
	kinds, _, err := Generate(timeSchemas(t), timeOpts("0.14.2"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Write(dir, "tf-time", kinds, command); err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds {
		for _, f := range []string{"v1.yaml", "README.md", "stdworker.yaml"} {
			want, _ := os.ReadFile(filepath.Join(dir, k.Manifest.Kind, f))
			got, err := os.ReadFile(filepath.Join("..", "..", "..", "catalog", "tf-time", k.Manifest.Kind, f))
			if err != nil || string(got) != string(want) {
				t.Errorf("catalog/tf-time/%s/%s is not what the generator writes (%v); regenerate it", k.Manifest.Kind, f, err)
			}
		}
	}
}
