package stdcel

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{"", "plain", "${a}", "x${a.b}y${c}", "$${a}", "${ {'a': '}'}.a }", `${"}"}`, "${'''}'''}", "${r'\\'}",
		"${", "${}", "${ '", "${\"a\nb\"}", "${{{}}}", "$$${x}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		segs, err := parseTemplate(s)
		if err != nil {
			return
		}
		for _, sg := range segs {
			if sg.isExpr && strings.TrimSpace(sg.text) == "" {
				t.Fatalf("empty expression in %q", s)
			}
			if sg.isExpr && !strings.Contains(s, "${"+sg.text+"}") {
				t.Fatalf("expression %q is not delimited in %q", sg.text, s)
			}
		}
		if !hasExpr(s) && len(segs) > 1 {
			t.Fatalf("%q has no expression but %d segments", s, len(segs))
		}
	})
}

// FuzzGraphExpr puts arbitrary text where an expression goes and checks
// that compiling, composing and observing never panic, and that every
// compile problem names a path.
func FuzzGraphExpr(f *testing.F) {
	for _, s := range []string{"${schema.spec.image}", "${db.status.host}", "a${db.status.port}b", "${schema.spec.regions.map(r, r + db.status.host)}",
		"${1/0}", "${db.status.?host.orValue('x')}", "${[1,2,3].all(x, x > 0) ? 'y' : 'n'}", "${", "${schema.spec.image +}", "${db}",
		"${schema.spec.regions.filter(x, x == db.status.host)[0]}", "${string(schema.spec.replicas) + db.spec.engine}"} {
		f.Add(s, "shop")
	}
	f.Fuzz(func(t *testing.T, s, name string) {
		spec, _ := json.Marshal(map[string]any{"image": s, "database_url": s})
		src := graphWith(string(spec), "")
		def, err := DecodeDefinition([]byte(src))
		if err != nil {
			return
		}
		g, err := Compile(context.Background(), def, testLookup)
		if err != nil {
			ce, ok := err.(*CheckError)
			if !ok {
				t.Fatalf("Compile = %v, want a *CheckError", err)
			}
			for _, p := range ce.Problems {
				if p.Path == "" || p.Message == "" {
					t.Fatalf("problem without path or message: %+v", p)
				}
			}
			return
		}
		inst := Instance{Name: name, Spec: map[string]any{"image": s, "regions": []any{s, "eu"}}}
		plan, err := g.Compose(inst)
		if err != nil {
			return
		}
		g.Observe(inst, plan, map[string]Observed{"demo.database/" + name + "-db": {Status: map[string]any{"host": s, "port": json.Number("1")}}})
	})
}
