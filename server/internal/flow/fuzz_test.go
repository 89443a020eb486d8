package flow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/convergehq/converge/server/internal/schema"
)

func FuzzParsePointer(f *testing.F) {
	for _, s := range []string{"", "/", "/a/b", "/a~0b~1c", "/~", "/~2", "a", "/-", "/0/1", "/\xff", "//~01"} {
		f.Add(s)
	}
	doc := map[string]any{"a": []any{map[string]any{"b": "c"}}, "": nil, "~/": 1.0}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePointer(s)
		if err != nil {
			if !strings.Contains(err.Error(), fmt.Sprintf("%q", s)) {
				t.Fatalf("error %q does not name the pointer %q", err, s)
			}
			return
		}
		if p.String() != s || schema.JoinPointer("", p.tokens...) != s {
			t.Fatalf("ParsePointer(%q) renders as %q / %q", s, p.String(), schema.JoinPointer("", p.tokens...))
		}
		p.Get(doc)
	})
}

func FuzzSet(f *testing.F) {
	f.Add("/a/b", []byte(`{"a": {"c": 1}}`), []byte(`2`))
	f.Add("/l/-", []byte(`{"l": [1, 2]}`), []byte(`{"x": null}`))
	f.Add("/l/5/x", []byte(`{"l": []}`), []byte(`"s"`))
	f.Add("", []byte(`[1, [2, [3]]]`), []byte(`true`))
	f.Add("/s/x", []byte(`{"s": "str"}`), []byte(`1.5e3`))
	f.Add("/0/1", []byte(`[[1, 2], {}]`), []byte(`[]`))
	f.Fuzz(func(t *testing.T, ptr string, docJSON, valueJSON []byte) {
		doc, ok1 := decodeFuzz(docJSON)
		value, ok2 := decodeFuzz(valueJSON)
		p, err := ParsePointer(ptr)
		if !ok1 || !ok2 || err != nil {
			return
		}
		before := copyJSON(doc)
		out, err := p.Set(doc, value)
		if !reflect.DeepEqual(doc, before) {
			t.Fatalf("Set(%q) changed its input from %v to %v", ptr, before, doc)
		}
		if err != nil {
			if !strings.Contains(err.Error(), fmt.Sprintf("%q", ptr)) {
				t.Fatalf("error %q does not name the pointer", err)
			}
			return
		}
		if !slices.Contains(p.tokens, "-") {
			if got, ok := p.Get(out); !ok || !schema.EqualJSON(got, value) {
				t.Fatalf("after Set(%q, %v), Get = %v, %v", ptr, value, got, ok)
			}
		}
		got, changed, err := Apply(doc, []Write{{To: p, Value: value}})
		if err != nil || !schema.EqualJSON(got, out) {
			t.Fatalf("Apply = %v, %v; want %v as Set gave", got, err, out)
		}
		if old, ok := p.Get(doc); ok && schema.EqualJSON(old, value) && changed {
			t.Fatalf("Apply of an equal value reported a change")
		}
		if !reflect.DeepEqual(doc, before) {
			t.Fatalf("Apply changed its input")
		}
	})
}

func decodeFuzz(data []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`status.cidr + "/24"`, `status.subnets.map(s, s.id)`, `status.?a.orValue(1)`, `has(status.a.b)`,
		`{"a": [1, 2.5, "x", null, true]}`, `status.n / 0`, `spec.l[3]`, `status.l.exists(x, x in spec.l)`,
		`timestamp(status.t) - duration("1h")`, `b"x"`, `type(status)`, `status.`, `"\xff"`, `[?status.?a]`,
		`status.m.map(k, k + "=" + string(status.m[k]))`, `lists.range(5).map(x, lists.range(x).sum())`,
		`status.s.split(",").sortBy(x, x).join("-")`, `math.least([1, 2])`, `sets.intersects(status.a, spec.b)`,
	} {
		f.Add(s)
	}
	status := map[string]any{
		"cidr": "10.0.0.0", "n": json.Number("3"), "t": "2024-01-01T00:00:00Z", "s": "b,a",
		"subnets": []any{map[string]any{"id": "s-1"}}, "l": []any{json.Number("1"), "x"},
		"m": map[string]any{"k": "v"}, "a": []any{json.Number("1")},
	}
	spec := map[string]any{"l": []any{"x"}, "b": []any{json.Number("1.5")}}
	f.Fuzz(func(t *testing.T, expr string) {
		p, err := Compile("", expr, "/x")
		if err != nil {
			var ce *CompileError
			if !errors.As(err, &ce) || len(ce.Problems) == 0 {
				t.Fatalf("Compile(%q) error %v (%T) has no problems", expr, err, err)
			}
			return
		}
		for _, in := range [][2]any{{status, spec}, {nil, nil}} {
			_, err := p.Eval(in[0], in[1])
			var ee *EvalError
			if err != nil && !errors.Is(err, ErrMissing) && !errors.As(err, &ee) {
				t.Fatalf("Eval(%q) error %v (%T) is neither ErrMissing nor *EvalError", expr, err, err)
			}
		}
	})
}
