package catalog_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/convergehq/converge/server/internal/catalog"
)

// FuzzLoad loads and checks a catalog whose files hold arbitrary bytes: it
// must never panic, and every problem must name a file.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("type: manifest\nkind: web\nkind_version: 1\nowner: acme\n"), []byte("type: resource\nkind: web\nkind_version: 1\nname: x\n"), []byte("def compose(ctx):\n    return {}\n"))
	f.Add([]byte("type: resource\nkind: std.graph\nkind_version: 1\nname: g\nspec: {kind: web, version: 1, resources: [{id: a, kind: web, version: 1}]}\n"), []byte("---\n---\n"), []byte("load(\"x.star\", \"y\")"))
	f.Add([]byte("a: &a [*a]\n"), []byte("{"), []byte("compose = 1"))
	f.Fuzz(func(t *testing.T, version, example, star []byte) {
		fsys := fstest.MapFS{
			"c/acme/OWNERS":                  {Data: []byte("@a\n")},
			"c/acme/web/README.md":           {Data: []byte("# web\n")},
			"c/acme/web/v1.yaml":             {Data: version},
			"c/acme/web/v2.yaml":             {Data: example},
			"c/acme/web/examples/x.yaml":     {Data: example},
			"c/acme/web/configs/x.yaml":      {Data: version},
			"c/acme/web/bundle/main.star":    {Data: star},
			"c/acme/graph/v1.yaml":           {Data: version},
			"c/acme/graph/bindings/b.yaml":   {Data: example},
			"c/other/web/v1.yaml":            {Data: version},
			"c/other/web/bundle/x/main.star": {Data: star},
		}
		c, err := catalog.Load(fsys, "c")
		if err != nil {
			t.Fatal(err)
		}
		base, err := catalog.Load(fstest.MapFS{"c/acme/web/v1.yaml": {Data: example}, "c/acme/web/v2.yaml": {Data: version}}, "c")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range c.Check(context.Background(), base) {
			if p.File == "" || p.Rule == "" || p.Message == "" {
				t.Fatalf("incomplete problem %#v", p)
			}
		}
	})
}
