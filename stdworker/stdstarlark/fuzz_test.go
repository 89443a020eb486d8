package stdstarlark

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// FuzzCompose runs arbitrary programs through compose and the conversion
// of their result into children, edges and status: nothing may panic, every
// failure is an error, and every success is a result the SDK can send.
func FuzzCompose(f *testing.F) {
	for _, seed := range []string{
		"def compose(ctx):\n    return []\n",
		"def compose(ctx):\n    c = child(\"a\", \"b\", {\"x\": [1, 2.5, None, True, {\"y\": \"z\"}]}, labels = {\"l\": \"v\"})\n    return {\"children\": [c], \"edges\": [depends(c, ref(\"k\", \"n\"), flows = {\"/status/a\": \"/spec/b\"})], \"status\": {\"n\": 1}}\n",
		"def compose(ctx):\n    return {\"status\": struct(a = 1, b = [1, (2, 3)])}\n",
		"def compose(ctx):\n    return [child(\"a\", str(i)) for i in range(10)]\n",
		"def compose(ctx):\n    while True:\n        pass\n",
		"def compose(ctx):\n    return {\"status\": {\"x\": 1 << 500}}\n",
		"def compose(ctx):\n    return {\"status\": {\"x\": json.decode(\"[1,2]\")}}\n",
		"load(\"x.star\", \"y\")\n",
	} {
		f.Add(seed)
	}
	dir := f.TempDir()
	main := filepath.Join(dir, DefaultMain)
	p := newProgram(dir)
	p.maxSteps = 20000
	f.Fuzz(func(t *testing.T, src string) {
		if err := os.WriteFile(main, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := p.composeHandler(true)(ctx, composeTask(t, "fuzz", map[string]any{"n": 1}))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error message")
			}
			return
		}
		if res == nil || !res.Compose {
			t.Fatalf("success without a composition: %+v", res)
		}
		if res.Status != nil {
			var m map[string]any
			if err := json.Unmarshal(res.Status.(json.RawMessage), &m); err != nil {
				t.Fatalf("status %s is not a JSON object: %v", res.Status, err)
			}
		}
		for i, c := range res.Children {
			var m map[string]any
			if err := json.Unmarshal(c.Spec.(json.RawMessage), &m); err != nil {
				t.Fatalf("children[%d] spec %s is not a JSON object: %v", i, c.Spec, err)
			}
			if c.Kind == "" || c.Name == "" || c.KindVersion < 1 {
				t.Fatalf("children[%d] = %+v", i, c)
			}
		}
		for i, e := range res.Edges {
			if e.Dependent.Kind == "" || e.Dependency.Kind == "" {
				t.Fatalf("edges[%d] = %+v", i, e)
			}
			for _, fl := range e.Flows {
				if !strings.HasPrefix(fl.To, "/") || (fl.Expr == "" && !strings.HasPrefix(fl.From, "/")) {
					t.Fatalf("edges[%d] flow %+v", i, fl)
				}
			}
		}
	})
}

// FuzzJSONRoundTrip: a spec converted to Starlark and back is the same
// JSON.
func FuzzJSONRoundTrip(f *testing.F) {
	for _, seed := range []string{`{}`, `{"a":[1,2.5,"x",null,true,{"b":{}}]}`, `{"n":123456789012345678901234567890}`, `{"f":1e300,"g":-0.0}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var orig map[string]any
		if json.Unmarshal([]byte(in), &orig) != nil {
			return
		}
		v, err := fromJSON(json.RawMessage(in))
		if err != nil {
			t.Fatalf("fromJSON(%s): %v", in, err)
		}
		out, err := toJSON(v, "spec")
		if err != nil {
			if strings.Contains(err.Error(), "nested more than") || strings.Contains(err.Error(), "characters") {
				return
			}
			t.Fatalf("toJSON of %s: %v", in, err)
		}
		var back map[string]any
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("round trip of %s gives %s: %v", in, out, err)
		}
		if !reflect.DeepEqual(orig, back) {
			t.Fatalf("round trip of %s gives %s", in, out)
		}
	})
}
