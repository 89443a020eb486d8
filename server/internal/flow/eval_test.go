package flow

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func mustCompile(t testing.TB, from, expr, to string) *Program {
	t.Helper()
	p, err := Compile(from, expr, to)
	if err != nil {
		t.Fatalf("Compile(%q, %q, %q): %v", from, expr, to, err)
	}
	return p
}

func TestEvalPointer(t *testing.T) {
	status := decode(t, `{"account_id": "acct-1", "net": {"ids": ["a", "b"], "none": null}, "n": 9007199254740993}`)
	tests := []struct{ from, want string }{
		{"/account_id", `"acct-1"`},
		{"/net/ids", `["a", "b"]`},
		{"/net/ids/1", `"b"`},
		{"/net/none", `null`},
		{"/n", `9007199254740993`},
	}
	for _, tt := range tests {
		got, err := mustCompile(t, tt.from, "", "/x").Eval(status, nil)
		if err != nil || !reflect.DeepEqual(got, decode(t, tt.want)) {
			t.Errorf("Eval(from %q) = %#v, %v; want %s", tt.from, got, err, tt.want)
		}
	}
	// The value is a copy: changing it cannot reach the status.
	got, err := mustCompile(t, "/net", "", "/x").Eval(status, nil)
	if err != nil {
		t.Fatal(err)
	}
	got.(map[string]any)["ids"].([]any)[0] = "changed"
	if v, _ := mustParse(t, "/net/ids/0").Get(status); v != "a" {
		t.Errorf("changing the flowed value changed the status: /net/ids/0 = %v", v)
	}
}

func TestEvalCEL(t *testing.T) {
	status := decode(t, `{
		"cidr": "10.0.0.0", "n": 41, "ratio": 0.25, "whole": 2.0, "big": 9007199254740993,
		"huge": 1e400, "ok": true, "none": null, "created": "2024-01-02T03:04:05Z",
		"subnets": [{"id": "s-1", "zone": "a", "public": true}, {"id": "s-2", "zone": "b", "public": false}],
		"tags": {"team": "net", "env": "prod"}
	}`)
	spec := decode(t, `{"name": "web", "size": 3}`)
	tests := []struct {
		expr string
		want any
	}{
		{`status.cidr + "/24"`, "10.0.0.0/24"},
		{`spec.name + "-vpc"`, "web-vpc"},
		{`status.n + 1`, json.Number("42")},
		{`status.n * spec.size`, json.Number("123")},
		{`status.ratio * 2.0`, json.Number("0.5")},
		{`status.whole + 1`, json.Number("3")}, // 2.0 is a whole number: a CEL int
		{`double(status.n) / 2.0`, json.Number("20.5")},
		{`status.big`, json.Number("9007199254740993")},
		{`status.big + 1`, json.Number("9007199254740994")},
		{`1.0 / 3.0`, json.Number("0.3333333333333333")},
		{`1e21 * 1.0`, json.Number("1e+21")},
		{`18446744073709551615u`, json.Number("18446744073709551615")},
		{`status.ok && !has(status.missing)`, true},
		{`status.none`, nil},
		{`status.subnets.filter(s, s.public).map(s, s.id)`, []any{"s-1"}},
		{`status.subnets.map(s, s.zone + "/" + s.id).join(",")`, "a/s-1,b/s-2"},
		{`status.tags.team`, "net"},
		{`status.tags`, map[string]any{"team": "net", "env": "prod"}},
		{`{"name": spec.name, "count": size(status.subnets), "list": [1, "two", null]}`,
			map[string]any{"name": "web", "count": json.Number("2"), "list": []any{json.Number("1"), "two", nil}}},
		{`status.?zone.orValue("us-east-1a")`, "us-east-1a"},
		{`status.?cidr`, "10.0.0.0"},
		{`[?status.?missing, ?optional.of(1)]`, []any{json.Number("1")}},
		{`duration("90s")`, "90s"},
		{`timestamp(status.created) + duration("1h")`, "2024-01-02T04:04:05Z"},
		{`timestamp(status.created).getHours()`, json.Number("3")},
		{`base64.encode(bytes(status.cidr))`, "MTAuMC4wLjA="},
		{`status.cidr.split(".").map(p, int(p))`, []any{json.Number("10"), json.Number("0"), json.Number("0"), json.Number("0")}},
		{`math.greatest(status.n, 7)`, json.Number("41")},
	}
	for _, tt := range tests {
		got, err := mustCompile(t, "", tt.expr, "/x").Eval(status, spec)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Eval(%s) = %#v, %v; want %#v", tt.expr, got, err, tt.want)
		}
	}
}

// A document decoded without UseNumber has float64 numbers; whole ones
// must still be CEL ints so the same flow works either way.
func TestEvalFloat64Input(t *testing.T) {
	var status any
	if err := json.Unmarshal([]byte(`{"port": 8080, "ratio": 0.5, "n": -3}`), &status); err != nil {
		t.Fatal(err)
	}
	for expr, want := range map[string]any{
		`status.port + 1`:    json.Number("8081"),
		`status.ratio * 2.0`: json.Number("1"),
		`status.n * 2`:       json.Number("-6"),
		`[status.port]`:      []any{json.Number("8080")},
	} {
		got, err := mustCompile(t, "", expr, "/x").Eval(status, nil)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Eval(%s) = %#v, %v; want %#v", expr, got, err, want)
		}
	}
}

func TestEvalMissing(t *testing.T) {
	status := decode(t, `{"vpc": {"id": "v-1", "subnets": [{"id": "s-1"}, {"zone": "b"}]}, "empty": null}`)
	tests := []struct {
		name, from, expr string
		status           any
		want             string
	}{
		{"pointer", "/account_id", "", status, "status has no /account_id yet"},
		{"nested pointer", "/vpc/cidr", "", status, "status has no /vpc/cidr yet"},
		{"pointer past the end", "/vpc/subnets/2", "", status, "status has no /vpc/subnets/2 yet (status at /vpc/subnets has 2 elements)"},
		{"pointer through null", "/empty/id", "", status, "status has no /empty/id yet (status at /empty is null)"},
		{"pointer into no status", "/account_id", "", nil, "status has no /account_id yet"},
		{"CEL key", "", "status.account_id", status, "status has no /account_id yet"},
		{"CEL nested key", "", `status.vpc.cidr + "/24"`, status, "status has no /vpc/cidr yet"},
		{"CEL index", "", "status.vpc.subnets[2].id", status, "status has no /vpc/subnets/2 yet (status at /vpc/subnets has 2 elements)"},
		{"CEL string index", "", `status["vpc"]["route-table"]`, status, "status has no /vpc/route-table yet"},
		{"CEL key in an element", "", "status.vpc.subnets[1].id", status, "status has no /vpc/subnets/1/id yet"},
		{"CEL through null", "", "status.empty.id", status, "status has no /empty/id yet (status at /empty is null)"},
		{"CEL spec", "", "spec.name", status, "spec has no /name yet"},
		{"CEL no status", "", `status.cidr + "/24"`, nil, "status has no /cidr yet"},
		{"CEL inside a loop", "", "status.vpc.subnets.map(s, s.id)", status, `no key "id" yet at 1:28 in expr "status.vpc.subnets.map(s, s.id)"`},
		{"CEL shadowed status", "", "status.vpc.subnets.map(status, status.id)", status, `no key "id" yet at 1:38`},
		{"CEL computed index", "", "status.vpc.subnets.filter(s, has(s.zone))[1]", status, `no index 1 yet at 1:42`},
		{"CEL optional none", "", "status.?account_id", status, `expr "status.?account_id" has no value yet: the result is optional.none()`},
		{"CEL optional none inside", "", "[status.?account_id]", status, `expr "[status.?account_id]" has no value yet: the result's /0 is optional.none()`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mustCompile(t, tt.from, tt.expr, "/x").Eval(tt.status, nil)
			if !errors.Is(err, ErrMissing) {
				t.Fatalf("Eval = %#v, %v; want an error wrapping ErrMissing", got, err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to start with %q", err, tt.want)
			}
			var ee *EvalError
			if errors.As(err, &ee) {
				t.Errorf("a missing value is also an *EvalError: %v", err)
			}
		})
	}
}

func TestEvalErrors(t *testing.T) {
	status := decode(t, `{"name": "web", "n": 0, "l": [1], "m": {"a": 1}}`)
	tests := []struct {
		name, from, expr string
		want             EvalError
	}{
		{"pointer into a string", "/name/first", "",
			EvalError{Field: "from", Source: "/name/first", Message: `status at /name is a string, so it has no "first"`}},
		{"pointer into a list by name", "/l/first", "",
			EvalError{Field: "from", Source: "/l/first", Message: `status at /l is a list, not an object; it has no key "first"`}},
		{"select from a string", "", "status.name.first",
			EvalError{Field: "expr", Source: "status.name.first", Line: 1, Column: 12, Message: `status at /name is a string, so it has no "first"`}},
		{"index an object", "", "status.m[0]",
			EvalError{Field: "expr", Source: "status.m[0]", Line: 1, Column: 9, Message: "status at /m is an object, not a list; it has no index 0"}},
		{"negative index", "", "status.l[-1]",
			EvalError{Field: "expr", Source: "status.l[-1]", Line: 1, Column: 9, Message: "index -1 into status at /l is negative"}},
		{"division by zero", "", "10 / status.n",
			EvalError{Field: "expr", Source: "10 / status.n", Line: 1, Column: 4, Message: "division by zero"}},
		{"no such overload", "", `status.n + "x"`,
			EvalError{Field: "expr", Source: `status.n + "x"`, Line: 1, Column: 10, Message: "no such overload"}},
		{"NaN", "", "0.0 / 0.0",
			EvalError{Field: "expr", Source: "0.0 / 0.0", Message: "the result is NaN, which is not a JSON number"}},
		{"bytes inside", "", `{"a": [b"x"]}`,
			EvalError{Field: "expr", Source: `{"a": [b"x"]}`, Message: "the result's /a/0 is bytes, which JSON cannot hold; convert with base64.encode(...) or string(...)"}},
		{"non-string key", "", `{1: "a"}`,
			EvalError{Field: "expr", Source: `{1: "a"}`, Message: "the result is a map with a key of type int (1); JSON object keys are strings"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mustCompile(t, tt.from, tt.expr, "/x").Eval(status, nil)
			var ee *EvalError
			if !errors.As(err, &ee) {
				t.Fatalf("Eval = %#v, %v; want an *EvalError", got, err)
			}
			if *ee != tt.want {
				t.Errorf("error = %+v\nwant     %+v", *ee, tt.want)
			}
			if errors.Is(err, ErrMissing) {
				t.Errorf("a failure is also ErrMissing: %v", err)
			}
		})
	}
}

func TestEvalErrorText(t *testing.T) {
	e := &EvalError{Field: "expr", Source: "status.n + 1", Line: 1, Column: 10, Message: "no such overload"}
	if got, want := e.Error(), `expr "status.n + 1" at 1:10: no such overload`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e = &EvalError{Field: "from", Source: "/a/b", Message: "m"}
	if got, want := e.Error(), `from "/a/b": m`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func numbers(n int) []any {
	l := make([]any, n)
	for i := range l {
		l[i] = json.Number(fmt.Sprint(i))
	}
	return l
}

func TestEvalLimits(t *testing.T) {
	status := map[string]any{
		"at_limit":   numbers(MaxLoopIterations),
		"over_limit": numbers(MaxLoopIterations + 1),
		"half":       numbers(MaxLoopIterations / 2),
		"text":       strings.Repeat("x", 100_000),
		"long":       numbers(120_000),
	}
	p := mustCompile(t, "", "status.at_limit.map(x, x * 2).size()", "/x")
	if got, err := p.Eval(status, nil); err != nil || got != json.Number(fmt.Sprint(MaxLoopIterations)) {
		t.Errorf("a loop of exactly MaxLoopIterations = %v, %v; want it to run", got, err)
	}
	failures := []struct{ expr, want string }{
		{"status.over_limit.map(x, x * 2)", "its loops exceed 1000 iterations (flow.MaxLoopIterations)"},
		{"status.over_limit.exists(x, x == 0)", "its loops exceed 1000 iterations"},
		{"status.over_limit.filter(x, false)", "its loops exceed 1000 iterations"},
		{"status.half.map(x, x).filter(x, x > 0).map(x, x)", "its loops exceed 1000 iterations"},
		{"status.half.map(x, status.half.map(y, y))", "its loops exceed 1000 iterations"},
		{"status.half.map(x, status.text + string(x)).size()", "exceeded the cost limit of 1000000 (flow.CostLimit)"},
		{"status.long.map(x, string(x)).join(',').size()", "its loops exceed"},
		{"status.text.split('').size()", ""},
		{"status.long", "the result is larger than 524288 bytes as JSON, the spec size limit"},
		{"lists.range(1001)", "lists.range: size 1001 exceeds maximum allowed (1000)"},
	}
	for _, f := range failures {
		got, err := mustCompile(t, "", f.expr, "/x").Eval(status, nil)
		if f.want == "" {
			if err != nil {
				t.Errorf("Eval(%s): %v", f.expr, err)
			}
			continue
		}
		var ee *EvalError
		if !errors.As(err, &ee) || !strings.Contains(ee.Message, f.want) {
			t.Errorf("Eval(%s) = %T, %v; want an *EvalError containing %q", f.expr, got, err, f.want)
		}
	}
}

func TestEvalConcurrent(t *testing.T) {
	p := mustCompile(t, "", `status.items.map(i, i.name + "-" + spec.suffix)`, "/names")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				name := fmt.Sprintf("g%d-%d", g, i)
				status := map[string]any{"items": []any{map[string]any{"name": name}}}
				got, err := p.Eval(status, map[string]any{"suffix": "x"})
				if err != nil || !reflect.DeepEqual(got, []any{name + "-x"}) {
					errs <- fmt.Errorf("Eval = %v, %v; want [%s-x]", got, err, name)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
