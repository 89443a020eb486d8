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

	"github.com/convergehq/converge/sdk-go/converge"
)

func TestComposeBundle(t *testing.T) {
	dir, _ := filepath.Abs("testdata/bundle")
	p := newProgram(dir)
	res, err := compose(t, p, map[string]any{"cidr": "10.0.0.0/16", "subnets": 2})
	if err != nil {
		t.Fatalf("compose: %v", err)
	}
	if !res.Compose || len(res.Children) != 3 {
		t.Fatalf("result %+v: want a composition of 3 children", res)
	}
	net := res.Children[0]
	if net.Kind != "network" || net.Name != "lz-net" || net.KindVersion != 1 || net.Labels["team"] != "infra" ||
		string(net.Spec.(json.RawMessage)) != `{"cidr":"10.0.0.0/16"}` {
		t.Errorf("network child = %+v", net)
	}
	if s := res.Children[2]; s.Kind != "subnet" || s.Name != "lz-subnet-1" || s.KindVersion != 2 || string(s.Spec.(json.RawMessage)) != `{"index":1}` {
		t.Errorf("second subnet = %+v", s)
	}
	wantEdge := converge.DependsOn(converge.RefTo("subnet", "lz-subnet-0"), converge.RefTo("network", "lz-net"),
		converge.FlowFrom("/id", "/network_id"), converge.FlowExpr("status.cidr + '/24'", "/range"))
	if len(res.Edges) != 3 || !reflect.DeepEqual(res.Edges[0], wantEdge) {
		t.Errorf("edges = %+v, want the first to be %+v", res.Edges, wantEdge)
	}
	shared := converge.Ref{Namespace: "infra", Kind: "dns", Name: "zone"}
	if !reflect.DeepEqual(res.References, []converge.Ref{shared}) || res.Edges[2].Dependency != shared {
		t.Errorf("references = %+v, last edge %+v: want the infra/dns/zone reference", res.References, res.Edges[2])
	}
	if got := string(res.Status.(json.RawMessage)); got != `{"generation":3,"subnets":2}` {
		t.Errorf("status = %s", got)
	}
}

func TestComposeIsDeterministic(t *testing.T) {
	dir, _ := filepath.Abs("testdata/bundle")
	p := newProgram(dir)
	spec := map[string]any{"cidr": "10.0.0.0/16", "subnets": 5}
	first, err := compose(t, p, spec)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		again, err := compose(t, p, spec)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(first, again) {
			t.Fatalf("two runs differ:\n%+v\n%+v", first, again)
		}
	}
	// Dict order follows sorted keys, whatever order the spec's JSON had.
	res, err := composeSrc(t, `
def compose(ctx):
    return {"status": {"keys": ",".join([k for k in ctx.spec])}}
`)
	if err != nil {
		t.Fatal(err)
	}
	_ = res
	p2 := bundle(t, map[string]string{"main.star": "def compose(ctx):\n    return {\"status\": {\"keys\": \",\".join([k for k in ctx.spec])}}\n"})
	task := composeTask(t, "x", nil)
	task.Spec = json.RawMessage(`{"b":1,"a":2,"c":3}`)
	res, err = p2.composeHandler(true)(context.Background(), task)
	if err != nil || string(res.Status.(json.RawMessage)) != `{"keys":"a,b,c"}` {
		t.Errorf("keys of ctx.spec: %v, %v; want a,b,c", res, err)
	}
}

func TestRollup(t *testing.T) {
	dir, _ := filepath.Abs("testdata/bundle")
	p := newProgram(dir)
	task := composeTask(t, "lz", map[string]any{})
	task.Rollup = &converge.Rollup{Total: 3, Ready: 2, Reconciling: 1}
	res, err := p.rollupHandler(context.Background(), task)
	if err != nil || string(res.Status.(json.RawMessage)) != `{"ready":2,"total":3}` {
		t.Fatalf("rollup: %+v, %v", res, err)
	}
	noRollup := bundle(t, map[string]string{"main.star": "def compose(ctx):\n    return []\n"})
	if _, err := noRollup.rollupHandler(context.Background(), task); err == nil || !converge.IsTerminal(err) || !strings.Contains(err.Error(), "main.star: defines no rollup(ctx) function") {
		t.Errorf("a bundle without rollup: %v", err)
	}
}

func TestProgramErrorsAreTerminalWithPosition(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"syntax", map[string]string{"main.star": "def compose(ctx)\n    return []\n"}, "main.star:2:1: got newline, want ':'"},
		{"undefined name", map[string]string{"main.star": "def compose(ctx):\n    return nope\n"}, "main.star:2:12: undefined: nope"},
		{"runtime", map[string]string{"main.star": "def compose(ctx):\n    x = {}\n    return x[\"k\"]\n"}, `main.star:3:13: key "k" not in dict`},
		{"fail", map[string]string{"main.star": "def compose(ctx):\n    fail(\"no cidr\")\n"}, "main.star:2:9: fail: no cidr"},
		{"syntax in a loaded file", map[string]string{"main.star": "load(\"lib.star\", \"f\")\ndef compose(ctx):\n    return f()\n", "lib.star": "def f(:\n"}, "cannot load lib.star: lib.star:1:8: got ':', want ')'"},
		{"error in a loaded function", map[string]string{"main.star": "load(\"lib.star\", \"f\")\ndef compose(ctx):\n    return f()\n", "lib.star": "def f():\n    return 1 // 0\n"}, "lib.star:2:14: floored division by zero (stack: main.star:3:13 in compose → lib.star:2:14 in f)"},
		{"missing compose", map[string]string{"main.star": "x = 1\n"}, "main.star: defines no compose(ctx) function"},
		{"compose not a function", map[string]string{"main.star": "compose = 1\n"}, "compose is a int, not a function"},
		{"compose arity", map[string]string{"main.star": "def compose():\n    return []\n"}, "main.star:1:1: compose(ctx) must take exactly one parameter"},
		{"missing module", map[string]string{"main.star": "load(\"nope.star\", \"f\")\ndef compose(ctx):\n    return []\n"}, "nope.star: no such file in the bundle"},
		{"escape", map[string]string{"main.star": "load(\"../x.star\", \"f\")\ndef compose(ctx):\n    return []\n"}, `"../x.star": outside the bundle`},
		{"escape from a subdirectory", map[string]string{"main.star": "load(\"lib/a.star\", \"f\")\ndef compose(ctx):\n    return []\n", "lib/a.star": "load(\"../../x.star\", \"g\")\nf = 1\n"}, `"../../x.star": outside the bundle`},
		{"not a star file", map[string]string{"main.star": "load(\"x.py\", \"f\")\ndef compose(ctx):\n    return []\n"}, `"x.py": a module is a .star file`},
		{"cycle", map[string]string{"main.star": "load(\"a.star\", \"f\")\ndef compose(ctx):\n    return []\n", "a.star": "load(\"b.star\", \"g\")\nf = 1\n", "b.star": "load(\"a.star\", \"f\")\ng = 1\n"}, "load cycle: a.star is already being loaded"},
		{"frozen spec", map[string]string{"main.star": "def compose(ctx):\n    ctx.spec[\"x\"] = 1\n    return []\n"}, "main.star:2:13: cannot insert into frozen hash table"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := compose(t, bundle(t, tc.files), map[string]any{})
			if err == nil || !converge.IsTerminal(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v (terminal %v), want a terminal error containing %q", err, converge.IsTerminal(err), tc.want)
			}
		})
	}
}

func TestSymlinkOutOfTheBundleIsRefused(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.star")
	if err := os.WriteFile(outside, []byte("f = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := bundle(t, map[string]string{"main.star": "load(\"link.star\", \"f\")\ndef compose(ctx):\n    return []\n"})
	if err := os.Symlink(outside, filepath.Join(p.dir, "link.star")); err != nil {
		t.Fatal(err)
	}
	_, err := compose(t, p, map[string]any{})
	if err == nil || !converge.IsTerminal(err) || !strings.Contains(err.Error(), "link.star") {
		t.Fatalf("load of a symlink leaving the bundle: err = %v, want a terminal error naming it", err)
	}
}

func TestStepLimit(t *testing.T) {
	p := bundle(t, map[string]string{"main.star": "def compose(ctx):\n    n = 0\n    while True:\n        n += 1\n    return []\n"})
	start := time.Now()
	_, err := compose(t, p, map[string]any{})
	if err == nil || !converge.IsTerminal(err) || !strings.Contains(err.Error(), "step limit") || !strings.Contains(err.Error(), "main.star:") {
		t.Fatalf("endless loop: err = %v, want a terminal step-limit error naming main.star", err)
	}
	t.Logf("the default step limit stopped an endless loop after %s: %v", time.Since(start), err)

	p.maxSteps = 1000
	_, err = compose(t, p, map[string]any{})
	if err == nil || !strings.Contains(err.Error(), "more than 1000 steps") {
		t.Errorf("max_steps 1000: err = %v", err)
	}
	// A top-level loop in a loaded file is bounded too.
	top := bundle(t, map[string]string{"main.star": "load(\"spin.star\", \"x\")\ndef compose(ctx):\n    return []\n", "spin.star": "x = 0\nwhile True:\n    pass\n"})
	if _, err := compose(t, top, map[string]any{}); err == nil || !strings.Contains(err.Error(), "step limit") || !strings.Contains(err.Error(), "spin.star:") {
		t.Errorf("top-level loop in a loaded file: err = %v, want a step-limit error naming spin.star", err)
	}
}

func TestDeadlineIsTransient(t *testing.T) {
	p := bundle(t, map[string]string{"main.star": "def compose(ctx):\n    while True:\n        pass\n"})
	p.maxSteps = maxMaxSteps
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := p.composeHandler(true)(ctx, composeTask(t, "x", map[string]any{}))
	if err == nil || converge.IsTerminal(err) || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("deadline: err = %v, want a transient error", err)
	}
}

func TestBadResults(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"not a dict", `return 1`, "main.star:1:1: compose(ctx) returned a bad result: the result is a int"},
		{"unknown key", `return {"kids": []}`, `the result has key "kids"`},
		{"child not a child", `return [{"kind": "x"}]`, "children[0] is a dict; want a child"},
		{"edge not an edge", `return {"edges": [1]}`, "edges[0] is a int; want an edge"},
		{"reference not a ref", `return {"references": ["x"]}`, "references[0] is a string; want a ref"},
		{"status not a dict", `return {"status": [1]}`, "status is a list; want a dict"},
		{"status NaN", `return {"status": {"x": float("nan")}}`, "status.x: nan is not a JSON number"},
		{"status bytes", `return {"status": {"x": b"raw"}}`, "status.x: a bytes cannot be turned into JSON"},
		{"spec key not a string", `return [child("a", "b", {1: 2})]`, `main.star:2:18: child: child "b" spec: dict key 1 is a int`},
		{"spec with a function", `return [child("a", "b", {"f": len})]`, `child "b" spec.f: a builtin_function_or_method cannot be turned into JSON`},
		{"spec not a dict", `return [child("a", "b", [1])]`, `child "b": spec is a list; want a dict`},
		{"bad version", `return [child("a", "b", version = 0)]`, "version 0 is not between 1 and 32767"},
		{"bad flow from", `c = child("a", "b"); return {"children": [c], "edges": [depends(c, c, flows = {"/spec/x": "/spec/y"})]}`, `flows key "/spec/x": want a pointer into the dependency's status`},
		{"bad flow to", `c = child("a", "b"); return {"children": [c], "edges": [depends(c, c, flows = {"/status/x": "/y"})]}`, `flows: "/y": want a pointer into the dependent's spec`},
		{"labels not a dict", `return [child("a", "b", labels = ["x"])]`, `child "b": labels is a list; want a dict`},
		{"flows not a dict", `c = child("a", "b"); return {"children": [c], "edges": [depends(c, c, flows = "x")]}`, "depends: flows is a string; want a dict"},
		{"dependent a ref", `return {"edges": [depends(ref("a", "b"), ref("c", "d"))]}`, "dependent is a ref; want a child"},
		{"deep", `d = {}
    for i in range(100):
        d = {"x": d}
    return {"status": d}`, "nested more than 64 levels deep"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := composeSrc(t, "def compose(ctx):\n    "+tc.body+"\n")
			if err == nil || !converge.IsTerminal(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a terminal error containing %q", err, tc.want)
			}
		})
	}
}

func TestOutputLimits(t *testing.T) {
	_, err := composeSrc(t, "def compose(ctx):\n    return [child(\"a\", \"c-%d\" % i) for i in range(100001)]\n")
	if err == nil || !converge.IsTerminal(err) || !strings.Contains(err.Error(), "main.star:2:18: child: output limit: more than 100000 children") {
		t.Errorf("too many children: err = %v", err)
	}
	_, err = composeSrc(t, "def compose(ctx):\n    return [child(\"a\", \"big\", {\"x\": \"y\" * (600 * 1024)})]\n")
	if err == nil || !converge.IsTerminal(err) || !strings.Contains(err.Error(), `output limit: child "big" spec is`) {
		t.Errorf("a spec over 512 KiB: err = %v", err)
	}
	_, err = composeSrc(t, "def compose(ctx):\n    return {\"status\": {\"x\": \"y\" * (600 * 1024)}}\n")
	if err == nil || !converge.IsTerminal(err) || !strings.Contains(err.Error(), "output limit: status is") {
		t.Errorf("a status over 512 KiB: err = %v", err)
	}
}

func TestNoneForOptionalArguments(t *testing.T) {
	res, err := composeSrc(t, "def compose(ctx):\n    c = child(\"a\", \"b\", None, labels = None)\n    return {\"children\": [c], \"edges\": [depends(c, ref(\"k\", \"n\"), flows = None, exprs = None)], \"status\": None}\n")
	if err != nil || len(res.Children) != 1 || len(res.Edges) != 1 || res.Status != nil {
		t.Fatalf("None for the optional arguments: %+v, %v", res, err)
	}
}

func TestLeafMustNotCompose(t *testing.T) {
	p := bundle(t, map[string]string{"main.star": "def compose(ctx):\n    return [child(\"a\", \"b\")]\n"})
	_, err := p.composeHandler(false)(context.Background(), composeTask(t, "x", map[string]any{}))
	if err == nil || !strings.Contains(err.Error(), "the reaction does not emit children") {
		t.Errorf("a leaf returning children: %v", err)
	}
	p = bundle(t, map[string]string{"main.star": "def compose(ctx):\n    return {\"status\": {\"ok\": True}}\n"})
	res, err := p.composeHandler(false)(context.Background(), composeTask(t, "x", map[string]any{}))
	if err != nil || res.Compose || string(res.Status.(json.RawMessage)) != `{"ok":true}` {
		t.Errorf("a leaf returning status: %+v, %v", res, err)
	}
}

func TestEditedBundleAppliesWithoutRestart(t *testing.T) {
	p := bundle(t, map[string]string{"main.star": "def compose(ctx):\n    return {\"status\": {\"v\": 1}}\n"})
	res, err := compose(t, p, map[string]any{})
	if err != nil || string(res.Status.(json.RawMessage)) != `{"v":1}` {
		t.Fatalf("first: %+v, %v", res, err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, "main.star"), []byte("def compose(ctx):\n    return {\"status\": {\"v\": 2}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = compose(t, p, map[string]any{})
	if err != nil || string(res.Status.(json.RawMessage)) != `{"v":2}` {
		t.Fatalf("after the edit: %+v, %v", res, err)
	}
}
