package stdcel

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"
)

// serverFlow evaluates a flow expression as the server does: over the
// dependency's status and spec, declared as JSON objects, in the same
// CEL dialect. missing is true when the value is not there yet.
func serverFlow(t *testing.T, src string, status, spec map[string]any) (v any, missing bool) {
	t.Helper()
	reg, err := types.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	obj := cel.MapType(cel.StringType, cel.DynType)
	env, err := cel.NewEnv(cel.CustomTypeProvider(reg), cel.CustomTypeAdapter(jsonAdapter{base: reg}),
		cel.Variable("status", obj), cel.Variable("spec", obj), cel.OptionalTypes(), ext.Strings(),
		ext.Lists(ext.ListsMaxRangeSize(1000)), ext.Sets(), ext.Math(), ext.Encoders(), cel.DefaultUTCTimeZone(true))
	if err != nil {
		t.Fatal(err)
	}
	a, iss := env.Compile(src)
	if iss.Err() != nil {
		t.Fatalf("the server would not compile flow %q: %v", src, iss.Err())
	}
	prg, err := env.Program(a)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := prg.Eval(map[string]any{"status": status, "spec": spec})
	if err != nil {
		if strings.Contains(err.Error(), "no such key") {
			return nil, true
		}
		t.Fatalf("flow %q: %v", src, err)
	}
	v, err = toJSON(out)
	if errors.Is(err, errNone) {
		return nil, true
	}
	if err != nil {
		t.Fatal(err)
	}
	return v, false
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestComposeWebapp(t *testing.T) {
	g := mustCompile(t, webapp)
	plan, err := g.Compose(Instance{Namespace: "default", Name: "shop", Spec: map[string]any{"image": "shop:1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Members) != 2 || len(plan.Edges) != 1 {
		t.Fatalf("want 2 children and 1 edge, got %+v", plan)
	}
	db, app := plan.Members[0].Child, plan.Members[1].Child
	if db.Name != "shop-db" || app.Name != "shop-app" {
		t.Errorf("names %q, %q", db.Name, app.Name)
	}
	// The default replicas (2) reaches both children.
	if got := jsonOf(t, db.Spec); got != `{"engine":"postgres","size":20}` {
		t.Errorf("db spec %s", got)
	}
	// database_url is required, so it holds a placeholder until the value flows.
	if got := jsonOf(t, app.Spec); got != `{"database_url":"","image":"shop:1","replicas":2}` {
		t.Errorf("app spec %s", got)
	}
	e := plan.Edges[0]
	if e.Dependent != app.Ref() || e.Dependency != db.Ref() || len(e.Flows) != 1 || e.Flows[0].To != "/database_url" {
		t.Fatalf("edge %+v", e)
	}
	src := e.Flows[0].Expr
	// Not ready: the flow has no value yet, so the app waits.
	if _, missing := serverFlow(t, src, map[string]any{"host": "10.0.0.5", "port": json.Number("5432"), "ready": false}, nil); !missing {
		t.Errorf("flow %q has a value before db is ready", src)
	}
	v, missing := serverFlow(t, src, map[string]any{"host": "10.0.0.5", "port": json.Number("5432"), "ready": true}, nil)
	if missing || v != "postgres://10.0.0.5:5432/shop" {
		t.Errorf("flow %q = %v (missing %v)", src, v, missing)
	}
}

func TestComposeIncludeWhenCascades(t *testing.T) {
	g := mustCompile(t, graphWith(`{"image": "i", "database_url": "${db.status.host}"}`, "")) // app reads db
	src := strings.Replace(graphWith(`{"image": "i", "database_url": "${db.status.host}"}`, ""),
		`"id": "db", "kind": "demo.database", "version": 1,`,
		`"id": "db", "kind": "demo.database", "version": 1, "includeWhen": ["${schema.spec.replicas > 1}"],`, 1)
	g = mustCompile(t, src)
	plan, err := g.Compose(Instance{Name: "x", Spec: map[string]any{"image": "i", "replicas": json.Number("1")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Members) != 0 {
		t.Errorf("db is excluded, and app reads it: want no children, got %d", len(plan.Members))
	}
	plan, err = g.Compose(Instance{Name: "x", Spec: map[string]any{"image": "i", "replicas": json.Number("3")}})
	if err != nil || len(plan.Members) != 2 {
		t.Errorf("want both children, got %v, %v", plan, err)
	}
}

const forEachGraph = `{"kind": "webapp", "version": 1, "spec_schema": {"type": "object", "properties": {"regions": {"type": "array", "items": {"type": "string"}}}},
	"resources": [
	{"id": "db", "kind": "demo.database", "version": 1, "template": {"spec": {"engine": "pg"}}},
	{"id": "apps", "kind": "demo.service", "version": 1, "name": "${schema.metadata.name}-${r}", "forEach": [{"r": "${schema.spec.regions}"}],
	 "readyWhen": ["${apps.status.replicas > 0}"],
	 "template": {"spec": {"image": "i", "region": "${r}", "database_url": "${db.status.host + '/' + r}"}}}],
	"status": {"urls": "${apps.map(a, a.status.url)}", "host": "${db.status.host}"}}`

func TestComposeForEach(t *testing.T) {
	g := mustCompile(t, forEachGraph)
	plan, err := g.Compose(Instance{Name: "w", Spec: map[string]any{"regions": []any{"eu", "us"}}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range plan.Members {
		names = append(names, m.Child.Name)
	}
	if !reflect.DeepEqual(names, []string{"w-db", "w-eu", "w-us"}) {
		t.Fatalf("children %v", names)
	}
	if got := jsonOf(t, plan.Members[2].Child.Spec); got != `{"database_url":"","image":"i","region":"us"}` {
		t.Errorf("spec %s", got)
	}
	if len(plan.Edges) != 2 {
		t.Fatalf("edges %+v", plan.Edges)
	}
	v, _ := serverFlow(t, plan.Edges[1].Flows[0].Expr, map[string]any{"host": "h"}, nil)
	if v != "h/us" {
		t.Errorf("flow %q = %v", plan.Edges[1].Flows[0].Expr, v)
	}

	many := make([]any, MaxForEachItems+1)
	for i := range many {
		many[i] = "r" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
	}
	_, err = g.Compose(Instance{Name: "w", Spec: map[string]any{"regions": many}})
	if err == nil || !strings.Contains(err.Error(), "resources[1]: forEach expands to 257 children; the limit is 256") {
		t.Errorf("want the forEach limit, got %v", err)
	}
}

func TestObserve(t *testing.T) {
	g := mustCompile(t, forEachGraph)
	inst := Instance{Name: "w", Spec: map[string]any{"regions": []any{"eu", "us"}}}
	plan, err := g.Compose(inst)
	if err != nil {
		t.Fatal(err)
	}
	obs := g.Observe(inst, plan, map[string]Observed{
		"demo.database/w-db": {Status: map[string]any{"host": "h"}},
		"demo.service/w-eu":  {Status: map[string]any{"url": "https://eu", "replicas": json.Number("2")}},
		"demo.service/w-us":  {Status: map[string]any{"url": "https://us", "replicas": json.Number("0")}},
	})
	if obs.Ready() || len(obs.NotReady) != 1 || !strings.Contains(obs.NotReady[0], "apps demo.service/w-us: readyWhen[0] ${apps.status.replicas > 0} is false") {
		t.Errorf("not ready: %q", obs.NotReady)
	}
	if got := jsonOf(t, obs.Status); got != `{"host":"h","urls":["https://eu","https://us"]}` {
		t.Errorf("status %s", got)
	}
	// A value that does not exist yet leaves its field out.
	obs = g.Observe(inst, plan, map[string]Observed{"demo.service/w-eu": {}, "demo.service/w-us": {}})
	if got := jsonOf(t, obs.Status); got != `{}` || len(obs.Unprojected) != 0 {
		t.Errorf("status %s, unprojected %q", got, obs.Unprojected)
	}
	if len(obs.NotReady) != 3 {
		t.Errorf("not ready %q", obs.NotReady)
	}
}

func TestComposeRuntimeErrorsNamePath(t *testing.T) {
	g := mustCompile(t, graphWith(`{"image": "${schema.spec.image}", "database_url": "x", "replicas": "${10 / (schema.spec.replicas - 2)}"}`, ""))
	_, err := g.Compose(Instance{Name: "x", Spec: map[string]any{"image": "i"}})
	if err == nil || !strings.Contains(err.Error(), "resources[1].template.spec.replicas: ${10 / (schema.spec.replicas - 2)}: division by zero") {
		t.Errorf("got %v", err)
	}
}

func TestComposeLiterals(t *testing.T) {
	// Schema values inlined into a flow keep their types and escapes.
	g := mustCompile(t, `{"kind": "webapp", "version": 1, "spec_schema": {"type": "object", "properties": {"q": {"type": "string"}, "m": {"type": "object"}, "n": {"type": "number"}}},
		"resources": [
		{"id": "db", "kind": "demo.database", "version": 1, "template": {"spec": {"engine": "pg"}}},
		{"id": "app", "kind": "demo.service", "version": 1, "template": {"spec": {"image": "$${not} an expr",
		  "database_url": "${db.status.host + schema.spec.q + string(schema.spec.m.b) + string(schema.spec.m.a.size()) + string(schema.spec.n)}"}}}]}`)
	plan, err := g.Compose(Instance{Name: "x", Spec: map[string]any{"q": "\"\\\n☃", "m": map[string]any{"b": json.Number("1"), "a": []any{true, nil}}, "n": json.Number("1.5")}})
	if err != nil {
		t.Fatal(err)
	}
	if img := plan.Members[1].Child.Spec.(map[string]any)["image"]; img != "${not} an expr" {
		t.Errorf("image %q", img)
	}
	src := plan.Edges[0].Flows[0].Expr
	v, _ := serverFlow(t, src, map[string]any{"host": "h"}, nil)
	if v != "h\"\\\n☃121.5" {
		t.Errorf("flow %q = %q", src, v)
	}
}

func TestComposeMacroInFlow(t *testing.T) {
	g := mustCompile(t, `{"kind": "webapp", "version": 1, "spec_schema": {"type": "object", "properties": {"regions": {"type": "array", "items": {"type": "string"}}}},
		"resources": [
		{"id": "app", "kind": "demo.service", "version": 1, "template": {"spec": {"image": "i", "database_url": "x"}}},
		{"id": "db", "kind": "demo.database", "version": 1, "template": {"spec": {"engine": "pg",
		  "tags": "${schema.spec.regions.filter(r, r != 'us').map(r, r + '@' + app.status.url)}"}}}]}`)
	plan, err := g.Compose(Instance{Name: "x", Spec: map[string]any{"regions": []any{"eu", "us", "ap"}}})
	if err != nil {
		t.Fatal(err)
	}
	src := plan.Edges[0].Flows[0].Expr
	v, _ := serverFlow(t, src, map[string]any{"url": "u"}, nil)
	if jsonOf(t, v) != `["eu@u","ap@u"]` {
		t.Errorf("flow %q = %v", src, v)
	}
	// tags is not required: it is left out until its value flows in.
	if got := jsonOf(t, plan.Members[1].Child.Spec); got != `{"engine":"pg"}` {
		t.Errorf("spec %s", got)
	}
}

// TestComposeIsDeterministic: the same instance composes to the same
// answer every time, so composing again changes nothing on the server.
func TestComposeIsDeterministic(t *testing.T) {
	g := mustCompile(t, `{"kind": "webapp", "version": 1, "spec_schema": {"type": "object", "properties": {"m": {"type": "object"}}},
		"resources": [
		{"id": "db", "kind": "demo.database", "version": 1, "template": {"spec": {"engine": "pg"}}},
		{"id": "app", "kind": "demo.service", "version": 1, "template": {"spec": {"image": "i",
		  "database_url": "${db.status.host + string(schema.spec.m.size()) + string('a' in schema.spec.m)}"}}}]}`)
	m := map[string]any{}
	for i := range 20 {
		m[string(rune('a'+i))] = json.Number("1")
	}
	var first string
	for i := range 10 {
		plan, err := g.Compose(Instance{Name: "x", Spec: map[string]any{"m": m}})
		if err != nil {
			t.Fatal(err)
		}
		got := jsonOf(t, plan)
		if i == 0 {
			first = got
			if src := plan.Edges[0].Flows[0].Expr; !strings.Contains(src, `{"a": 1, "b": 1, "c": 1`) {
				t.Fatalf("the instance's map is not inlined in order: %s", src)
			}
		} else if got != first {
			t.Fatalf("compose %d differs:\n%s\n%s", i, got, first)
		}
	}
}

func TestCheckErrorIsBounded(t *testing.T) {
	var fields []string
	for i := range 60 {
		fields = append(fields, `"f`+string(rune('A'+i%26))+strings.Repeat("x", i/26)+`": 1`)
	}
	ps := compileProblems(t, graphWith(`{"image": "i", "database_url": "x", `+strings.Join(fields, ", ")+`}`, ""))
	msg := (&CheckError{Problems: ps}).Error()
	if len(ps) != 60 || !strings.Contains(msg, "the graph has 60 problem(s)") || !strings.HasSuffix(msg, "... and 10 more") {
		t.Errorf("%d problems:\n%s", len(ps), msg)
	}
}

func TestObserveNamesProjectionErrors(t *testing.T) {
	g := mustCompile(t, `{"kind": "webapp", "version": 1,
		"resources": [{"id": "db", "kind": "demo.database", "version": 1, "template": {"spec": {"engine": "pg"}}}],
		"status": {"ratio": "${100 / (db.status.port - 5432)}", "host": "${db.status.host}"}}`)
	inst := Instance{Name: "x"}
	plan, err := g.Compose(inst)
	if err != nil {
		t.Fatal(err)
	}
	obs := g.Observe(inst, plan, map[string]Observed{"demo.database/x-db": {Status: map[string]any{"host": "h", "port": json.Number("5432")}}})
	if jsonOf(t, obs.Status) != `{"host":"h"}` || len(obs.Unprojected) != 1 || !strings.Contains(obs.Unprojected[0], "status.ratio: ${100 / (db.status.port - 5432)}: division by zero") {
		t.Errorf("status %v, unprojected %q", obs.Status, obs.Unprojected)
	}
}

func TestComposeOptionalName(t *testing.T) {
	g := mustCompile(t, graphWith(`{"image": "i", "database_url": "x"}`, `, "name": "${schema.spec.?image}"`))
	plan, err := g.Compose(Instance{Name: "x", Spec: map[string]any{"image": "i"}})
	if err != nil || len(plan.Members) != 2 || plan.Members[1].Child.Name != "i" {
		t.Fatalf("plan %+v, %v", plan, err)
	}
	// A name that is not there is an error naming the path.
	_, err = g.Compose(Instance{Name: "x", Spec: map[string]any{"replicas": json.Number("3")}})
	if err == nil || !strings.Contains(err.Error(), "resources[1].name: the value is null, not a string") {
		t.Errorf("got %v", err)
	}
}

func TestProjectAtCompose(t *testing.T) {
	g := mustCompile(t, `{"kind": "webapp", "version": 1, "spec_fields": {"image": "string"},
		"resources": [{"id": "db", "kind": "demo.database", "version": 1, "template": {"spec": {"engine": "pg"}}}],
		"status": {"image": "${schema.spec.image}", "host": "${db.status.host}"}}`)
	got := g.Project(Instance{Name: "x", Spec: map[string]any{"image": "v2"}}, map[string]any{"image": "v1", "host": "h"})
	if jsonOf(t, got) != `{"host":"h","image":"v2"}` {
		t.Errorf("status %s", jsonOf(t, got))
	}
	// A status_schema the status does not satisfy yet holds it back.
	g = mustCompile(t, `{"kind": "webapp", "version": 1, "spec_fields": {"image": "string"},
		"status_schema": {"type": "object", "required": ["host"], "properties": {"host": {"type": "string"}, "image": {"type": "string"}}},
		"resources": [{"id": "db", "kind": "demo.database", "version": 1, "template": {"spec": {"engine": "pg"}}}],
		"status": {"image": "${schema.spec.image}", "host": "${db.status.host}"}}`)
	if got := g.Project(Instance{Name: "x", Spec: map[string]any{"image": "v2"}}, nil); got != nil {
		t.Errorf("status %v, want none: host is required", got)
	}
	inst := Instance{Name: "x", Spec: map[string]any{"image": "v2"}}
	plan, _ := g.Compose(inst)
	obs := g.Observe(inst, plan, nil)
	if obs.Status != nil || len(obs.Unprojected) != 1 || !strings.Contains(obs.Unprojected[0], "does not match status_schema yet") {
		t.Errorf("status %v, unprojected %q", obs.Status, obs.Unprojected)
	}
	obs = g.Observe(inst, plan, map[string]Observed{"demo.database/x-db": {Status: map[string]any{"host": "h"}}})
	if jsonOf(t, obs.Status) != `{"host":"h","image":"v2"}` {
		t.Errorf("status %v (%q)", obs.Status, obs.Unprojected)
	}
}
