package stdcel

import (
	"strings"
	"testing"
)

// graphWith returns the webapp graph with the app resource's template spec
// replaced by spec (a JSON object) and extra top-level JSON appended to
// the resource.
func graphWith(appSpec, appExtra string) string {
	return `{
  "kind": "webapp", "version": 1,
  "spec_schema": {"type": "object", "required": ["image"], "properties": {
     "image": {"type": "string"}, "replicas": {"type": "integer", "default": 2},
     "regions": {"type": "array", "items": {"type": "string"}}}},
  "resources": [
    {"id": "db", "kind": "demo.database", "version": 1, "template": {"spec": {"engine": "postgres"}}},
    {"id": "app", "kind": "demo.service", "version": 1` + appExtra + `, "template": {"spec": ` + appSpec + `}}
  ]
}`
}

func TestCheckRejects(t *testing.T) {
	cases := []struct {
		name  string
		graph string
		want  Problem
	}{
		{"unknown input field", graphWith(`{"image": "${schema.spec.imgae}", "database_url": "x"}`, ""),
			Problem{Path: "resources[1].template.spec.image", Line: 1, Column: 12, Message: "undefined field 'imgae'"}},
		{"unknown status field", graphWith(`{"image": "i", "database_url": "${db.status.hots}"}`, ""),
			Problem{Path: "resources[1].template.spec.database_url", Line: 1, Column: 10, Message: "undefined field 'hots'"}},
		{"unknown template field", graphWith(`{"image": "i", "database_url": "x", "prot": 5432}`, ""),
			Problem{Path: "resources[1].template.spec.prot", Message: `unknown field "prot"`}},
		{"type mismatch", graphWith(`{"image": "i", "database_url": "x", "replicas": "${schema.spec.image}"}`, ""),
			Problem{Path: "resources[1].template.spec.replicas", Line: 1, Column: 1, Message: "the expression is string, but the schema wants integer"}},
		{"no overload", graphWith(`{"image": "${schema.spec.image + 1}", "database_url": "x"}`, ""),
			Problem{Path: "resources[1].template.spec.image", Line: 1, Column: 19, Message: "found no matching overload for '_+_' applied to '(string, int)'"}},
		{"unknown id", graphWith(`{"image": "i", "database_url": "${dbb.status.host}"}`, ""),
			Problem{Path: "resources[1].template.spec.database_url", Line: 1, Column: 1, Message: `unknown name "dbb"`}},
		{"syntax error", graphWith(`{"image": "${schema.spec.image +}", "database_url": "x"}`, ""),
			Problem{Path: "resources[1].template.spec.image", Line: 1, Column: 20, Message: "Syntax error"}},
		{"multi-line position", graphWith(`{"image": "${schema.spec.image +\n  schema.spec.nope}", "database_url": "x"}`, ""),
			Problem{Path: "resources[1].template.spec.image", Line: 2, Column: 14, Message: "undefined field 'nope'"}},
		{"missing required", graphWith(`{"image": "i"}`, ""),
			Problem{Path: "resources[1].template.spec", Message: `missing required field "database_url"`}},
		{"literal mismatch", graphWith(`{"image": "i", "database_url": "x", "replicas": "three"}`, ""),
			Problem{Path: "resources[1].template.spec.replicas", Message: "the value is a string, but the schema wants integer"}},
		{"self reference", graphWith(`{"image": "${app.status.url}", "database_url": "x"}`, ""),
			Problem{Path: "resources[1].template.spec", Message: `resource "app" reads its own status or spec`}},
		{"includeWhen not bool", graphWith(`{"image": "i", "database_url": "x"}`, `, "includeWhen": ["${schema.spec.replicas}"]`),
			Problem{Path: "resources[1].includeWhen[0]", Line: 1, Column: 1, Message: "the expression is int; it must be a bool"}},
		{"includeWhen reads a resource", graphWith(`{"image": "i", "database_url": "x"}`, `, "includeWhen": ["${db.status.ready}"]`),
			Problem{Path: "resources[1].includeWhen[0]", Line: 1, Column: 1, Message: `includeWhen cannot read resource "db"`}},
		{"readyWhen reads another resource", graphWith(`{"image": "i", "database_url": "x"}`, `, "readyWhen": ["${db.status.ready}"]`),
			Problem{Path: "resources[1].readyWhen[0]", Line: 1, Column: 1, Message: `readyWhen of "app" cannot read resource "db"`}},
		{"readyWhen not whole", graphWith(`{"image": "i", "database_url": "x"}`, `, "readyWhen": ["ready: ${app.status.url}"]`),
			Problem{Path: "resources[1].readyWhen[0]", Message: "must be one ${...} expression"}},
		{"forEach not a list", graphWith(`{"image": "i", "database_url": "x"}`, `, "name": "${r}", "forEach": [{"r": "${schema.spec.image}"}]`),
			Problem{Path: "resources[1].forEach[0].r", Line: 1, Column: 1, Message: "forEach needs a list"}},
		{"forEach without name", graphWith(`{"image": "i", "database_url": "x"}`, `, "forEach": [{"r": "${schema.spec.regions}"}]`),
			Problem{Path: "resources[1].name", Message: "needs a name template that differs per item"}},
		{"two resources in one field", `{"kind": "webapp", "version": 1, "resources": [
			{"id": "db", "kind": "demo.database", "version": 1, "template": {"spec": {"engine": "pg"}}},
			{"id": "db2", "kind": "demo.database", "version": 1, "template": {"spec": {"engine": "pg"}}},
			{"id": "app", "kind": "demo.service", "version": 1, "template": {"spec": {"image": "i",
			  "database_url": "${db.status.host},${db2.status.host}"}}}]}`,
			Problem{Path: "resources[2].template.spec.database_url", Message: `reads "db", "db2": a value flows along one edge`}},
		{"unknown kind", `{"kind": "webapp", "version": 1, "resources": [{"id": "db", "kind": "demo.nope", "version": 1}]}`,
			Problem{Path: "resources[0].kind", Message: "kind demo.nope v1 is not registered on the server"}},
		{"duplicate id", `{"kind": "webapp", "version": 1, "resources": [
			{"id": "db", "kind": "demo.database", "version": 1, "template": {"spec": {"engine": "pg"}}},
			{"id": "db", "kind": "demo.database", "version": 1, "template": {"spec": {"engine": "pg"}}}]}`,
			Problem{Path: "resources[1].id", Message: `id "db" is already used by resources[0]`}},
		{"bad id", `{"kind": "webapp", "version": 1, "resources": [{"id": "my-db", "kind": "demo.database", "version": 1}]}`,
			Problem{Path: "resources[0].id", Message: `"my-db" is not an id`}},
		{"reserved id", `{"kind": "webapp", "version": 1, "resources": [{"id": "schema", "kind": "demo.database", "version": 1}]}`,
			Problem{Path: "resources[0].id", Message: `"schema" is reserved`}},
		{"bad kind name", `{"kind": "Web App", "version": 1, "resources": [{"id": "db", "kind": "demo.database", "version": 1, "template": {"spec": {"engine": "pg"}}}]}`,
			Problem{Path: "kind", Message: `"Web App" is not a kind name`}},
		{"contains itself", `{"kind": "webapp", "version": 1, "resources": [{"id": "w", "kind": "webapp", "version": 1}]}`,
			Problem{Path: "resources[0].kind", Message: "an instance cannot contain itself"}},
		{"unterminated", graphWith(`{"image": "${schema.spec.image", "database_url": "x"}`, ""),
			Problem{Path: "resources[1].template.spec.image", Message: "has no closing '}'"}},
		{"id without status", graphWith(`{"image": "${db.metadata}", "database_url": "x"}`, ""),
			Problem{Path: "resources[1].template.spec.image", Line: 1, Column: 3, Message: "undefined field 'metadata'"}},
		{"bare id", graphWith(`{"image": "i", "database_url": "x", "port": "${[db].size()}"}`, ""),
			Problem{Path: "resources[1].template.spec.port", Line: 1, Column: 2, Message: "read db through db.status.<field>"}},
		{"shadowing variable", graphWith(`{"image": "${schema.spec.regions.map(db, db).join(',')}", "database_url": "x"}`, ""),
			Problem{Path: "resources[1].template.spec.image", Line: 1, Column: 24, Message: `the variable "db" hides a name of the graph`}},
		{"name reads a resource", graphWith(`{"image": "i", "database_url": "x"}`, `, "name": "${db.status.host}"`),
			Problem{Path: "resources[1].name", Line: 1, Column: 1, Message: `a name cannot read resource "db"`}},
		{"status schema mismatch", `{"kind": "webapp", "version": 1,
			"status_schema": {"type": "object", "properties": {"port": {"type": "string"}}},
			"resources": [{"id": "db", "kind": "demo.database", "version": 1, "template": {"spec": {"engine": "pg"}}}],
			"status": {"port": "${db.status.port}"}}`,
			Problem{Path: "status.port", Line: 1, Column: 1, Message: "the expression is int, but the schema wants string"}},
		{"status unknown field", `{"kind": "webapp", "version": 1,
			"resources": [{"id": "db", "kind": "demo.database", "version": 1, "template": {"spec": {"engine": "pg"}}}],
			"status": {"port": "${db.status.prt}"}}`,
			Problem{Path: "status.port", Line: 1, Column: 10, Message: "undefined field 'prt'"}},
		{"collection in template", `{"kind": "webapp", "version": 1, "spec_schema": {"type": "object", "properties": {"regions": {"type": "array", "items": {"type": "string"}}}},
			"resources": [
			{"id": "dbs", "kind": "demo.database", "version": 1, "name": "db-${r}", "forEach": [{"r": "${schema.spec.regions}"}], "template": {"spec": {"engine": "pg"}}},
			{"id": "app", "kind": "demo.service", "version": 1, "template": {"spec": {"image": "i", "database_url": "${dbs[0].status.host}"}}}]}`,
			Problem{Path: "resources[1].template.spec.database_url", Line: 1, Column: 1, Message: `resource "dbs" expands with forEach`}},
		{"compact schema", `{"kind": "webapp", "version": 1, "spec_fields": {"image": "strng | required"},
			"resources": [{"id": "db", "kind": "demo.database", "version": 1, "template": {"spec": {"engine": "pg"}}}]}`,
			Problem{Path: "spec_fields.image", Message: `unknown type "strng"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps := compileProblems(t, c.graph)
			for _, p := range ps {
				if p.Path == c.want.Path && p.Line == c.want.Line && p.Column == c.want.Column && strings.Contains(p.Message, c.want.Message) {
					return
				}
			}
			t.Errorf("no problem like %v; got:\n%s", c.want, (&CheckError{Problems: ps}).Error())
		})
	}
}

func TestCheckCycle(t *testing.T) {
	ps := compileProblems(t, `{"kind": "webapp", "version": 1, "resources": [
		{"id": "db", "kind": "demo.database", "version": 1, "template": {"spec": {"engine": "${app.status.url}"}}},
		{"id": "app", "kind": "demo.service", "version": 1, "template": {"spec": {"image": "i", "database_url": "${db.status.host}"}}}]}`)
	want := "resources[0].template.spec: the references form a cycle: db -> app -> db (each reads the next)"
	for _, p := range ps {
		if p.String() == want {
			return
		}
	}
	t.Errorf("want %q; got %v", want, ps)
}

// TestCheckReportsEveryProblem: problems in different places are all
// reported, in the order of the graph, each rendered like a compiler's.
func TestCheckReportsEveryProblem(t *testing.T) {
	ps := compileProblems(t, graphWith(`{"image": "${schema.spec.imgae}", "database_url": "${db.status.hots}", "replicas": "x"}`, ""))
	if len(ps) != 3 {
		t.Fatalf("want 3 problems, got %d: %v", len(ps), ps)
	}
	got := (&CheckError{Problems: ps}).Error()
	for _, want := range []string{
		"resources[1].template.spec.database_url:1:10: undefined field 'hots'",
		"resources[1].template.spec.image:1:12: undefined field 'imgae'",
		"resources[1].template.spec.replicas: the value is a string, but the schema wants integer",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}

func TestCheckAccepts(t *testing.T) {
	for name, src := range map[string]string{
		"webapp": webapp,
		"compact schema": `{"kind": "webapp", "version": 1, "spec_fields": {"image": "string | required", "replicas": "integer | default=2 | minimum=1", "tags": "[]string", "db": {"size": "integer"}},
			"resources": [{"id": "db", "kind": "demo.database", "version": 1, "template": {"spec": {"engine": "pg", "size": "${schema.spec.db.size}", "tags": "${schema.spec.tags}"}}}]}`,
		"optional and has": graphWith(`{"image": "${has(schema.spec.image) ? schema.spec.image : 'x'}", "database_url": "${db.status.?host.orValue('none')}", "region": "${schema.spec.?image.orValue('eu')}"}`, ""),
		"forEach": `{"kind": "webapp", "version": 1, "spec_schema": {"type": "object", "properties": {"regions": {"type": "array", "items": {"type": "string"}}}},
			"resources": [
			{"id": "db", "kind": "demo.database", "version": 1, "template": {"spec": {"engine": "pg"}}},
			{"id": "apps", "kind": "demo.service", "version": 1, "name": "${schema.metadata.name}-${r}", "forEach": [{"r": "${schema.spec.regions}"}],
			 "readyWhen": ["${apps.status.replicas > 0}"],
			 "template": {"spec": {"image": "i", "region": "${r}", "database_url": "${db.status.host + '/' + r}"}}}],
			"status": {"urls": "${apps.map(a, a.status.url)}"}}`,
	} {
		t.Run(name, func(t *testing.T) { mustCompile(t, src) })
	}
}
