package stdcel

import (
	"context"
	"encoding/json"
	"testing"
)

// FuzzCompileDefinition fuzzes whole graph definitions (ids, kinds,
// forEach, includeWhen, readyWhen, templates, status) and the instance
// spec they compose: compiling never panics and reports every problem
// with a path and a message; a graph that compiles composes and observes
// any instance without panicking, and its plan is well formed.
func FuzzCompileDefinition(f *testing.F) {
	f.Add([]byte(webapp), []byte(`{"image":"nginx","replicas":3,"regions":["eu"]}`))
	f.Add([]byte(forEachGraph), []byte(`{"regions":["eu","us","eu"]}`))
	f.Add([]byte(`{"kind":"pair","version":1,"resources":[
		{"id":"a","kind":"demo.database","version":1,"template":{"spec":{"engine":"${b.status.host}"}}},
		{"id":"b","kind":"demo.database","version":1,"template":{"spec":{"engine":"${a.status.host}"}}}]}`), []byte(`{}`))
	f.Add([]byte(`{"kind":"opt","version":1,"spec_schema":{"type":"object","properties":{"cache":{"type":"boolean"}}},"resources":[
		{"id":"db","kind":"demo.database","version":1,"includeWhen":["${schema.spec.cache}"],"template":{"spec":{"engine":"redis"}}},
		{"id":"app","kind":"demo.service","version":1,"template":{"spec":{"image":"i","database_url":"${db.status.host}"}}}]}`), []byte(`{"cache":false}`))
	f.Add([]byte(`{"kind":"bad","version":0,"resources":[{"id":"","kind":"nope","version":1,"template":{"spec":{"x":"${"}}},
		{"id":"dup","kind":"demo.database","version":1},{"id":"dup","kind":"demo.database","version":1}],"status":{"a":"${dup.status.nope}"}}`), []byte(`[]`))
	f.Fuzz(func(t *testing.T, data, specJSON []byte) {
		def, err := DecodeDefinition(data)
		if err != nil {
			return
		}
		g, err := Compile(context.Background(), def, testLookup)
		if err != nil {
			ce, ok := err.(*CheckError)
			if !ok {
				t.Fatalf("Compile = %v (%T), want a *CheckError", err, err)
			}
			if len(ce.Problems) == 0 {
				t.Fatalf("CheckError without problems")
			}
			for _, p := range ce.Problems {
				if p.Path == "" || p.Message == "" {
					t.Fatalf("problem without path or message: %+v", p)
				}
			}
			return
		}
		var spec map[string]any
		if json.Unmarshal(specJSON, &spec) != nil {
			spec = map[string]any{}
		}
		inst := Instance{Namespace: "default", Name: "fuzz", Spec: spec}
		plan, err := g.Compose(inst)
		if err != nil {
			return
		}
		observed := map[string]Observed{}
		for _, m := range plan.Members {
			if m.ID == "" || m.Child.Kind == "" || m.Child.Name == "" {
				t.Fatalf("plan member without id, kind or name: %+v", m)
			}
			childSpec, _ := m.Child.Spec.(map[string]any)
			observed[m.Child.Kind+"/"+m.Child.Name] = Observed{Spec: childSpec, Status: map[string]any{
				"host": "h", "port": json.Number("5432"), "ready": true, "url": "u", "replicas": json.Number("1")}}
		}
		g.Observe(inst, plan, observed)
		g.Observe(inst, plan, nil)
	})
}
