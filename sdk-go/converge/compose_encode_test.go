package converge

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func TestEncodeCompositionNamesTheOffendingItem(t *testing.T) {
	acct := Child{Kind: "account", KindVersion: 1, Name: "a"}
	vpc := Child{Kind: "vpc", KindVersion: 1, Name: "v"}
	manyLabels := map[string]string{}
	for i := range 65 {
		manyLabels[fmt.Sprintf("k%d", i)] = "v"
	}
	flows := make([]Flow, 33)
	for i := range flows {
		flows[i] = FlowFrom("/a", fmt.Sprintf("/b%d", i))
	}
	with := func(f func(*Child)) []Child {
		c := acct
		f(&c)
		return []Child{vpc, c}
	}
	edge := func(flows ...Flow) []Edge { return []Edge{DependsOn(vpc.Ref(), acct.Ref(), flows...)} }
	cases := []struct {
		name string
		res  Result
		want string
	}{
		{"empty kind", Result{Children: with(func(c *Child) { c.Kind = "" })}, `children[1] "a": kind: must not be empty`},
		{"bad kind", Result{Children: with(func(c *Child) { c.Kind = "AWS" })}, `children[1] "a": kind: "AWS" must be lower-case words`},
		{"long kind", Result{Children: with(func(c *Child) { c.Kind = strings.Repeat("k", 64) })}, `kind: 64 characters, more than 63`},
		{"version 0", Result{Children: with(func(c *Child) { c.KindVersion = 0 })}, `children[1] "a": kind_version: 0 is not between 1 and 32767`},
		{"huge version", Result{Children: with(func(c *Child) { c.KindVersion = 1 << 40 })}, `kind_version: 1099511627776 is not between`},
		{"empty name", Result{Children: with(func(c *Child) { c.Name = "" })}, `children[1] "": name: must not be empty`},
		{"bad name", Result{Children: with(func(c *Child) { c.Name = "-a" })}, `children[1] "-a": name: "-a" must be lower-case letters`},
		{"long name", Result{Children: with(func(c *Child) { c.Name = strings.Repeat("n", 254) })}, `name: 254 characters, more than 253`},
		{"too many labels", Result{Children: with(func(c *Child) { c.Labels = manyLabels })}, `children[1] "a": labels: 65 labels, more than 64`},
		{"bad label key", Result{Children: with(func(c *Child) { c.Labels = map[string]string{"a b": "x"} })}, `labels["a b"]: key must be letters`},
		{"long label value", Result{Children: with(func(c *Child) { c.Labels = map[string]string{"team": strings.Repeat("é", 254)} })}, `labels["team"]: value is 254 characters, more than 253`},
		{"invalid label value", Result{Children: with(func(c *Child) { c.Labels = map[string]string{"team": "\xff"} })}, `labels["team"]: value is not valid UTF-8`},
		{"array spec", Result{Children: with(func(c *Child) { c.Spec = []int{1} })}, `children[1] "a": spec: must be a JSON object, got an array`},
		{"string spec", Result{Children: with(func(c *Child) { c.Spec = "x" })}, `spec: must be a JSON object, got a string`},
		{"unencodable spec", Result{Children: with(func(c *Child) { c.Spec = map[string]any{"f": func() {}} })}, `children[1] "a": spec: json: unsupported type`},
		{"huge spec", Result{Children: with(func(c *Child) { c.Spec = map[string]string{"x": strings.Repeat("x", maxChildSpecBytes)} })}, `spec: 524296 bytes encoded, more than the limit of 524288`},
		{"duplicate child", Result{Children: []Child{acct, vpc, acct}}, `children[2] "a": duplicates children[0] (same kind "account" and name)`},
		{"dependent namespace", Result{Children: []Child{acct, vpc}, Edges: []Edge{DependsOn(Ref{Namespace: "x", Kind: "vpc", Name: "v"}, acct.Ref())}},
			`edges[0] (vpc "x/v" → account "a"): dependent.namespace: "x": a dependent is a child`},
		{"bad dependency", Result{Edges: []Edge{DependsOn(vpc.Ref(), RefTo("Account", "a"))}}, `edges[0] (vpc "v" → Account "a"): dependency.kind: "Account" must be`},
		{"bad dependency namespace", Result{Edges: []Edge{DependsOn(vpc.Ref(), Ref{Namespace: "A", Kind: "account", Name: "a"})}}, `dependency.namespace: "A" must be`},
		{"self", Result{Edges: []Edge{DependsOn(vpc.Ref(), vpc.Ref())}}, `edges[0] (vpc "v" → vpc "v"): a resource cannot depend on itself`},
		{"too many flows", Result{Edges: edge(flows...)}, `edges[0] (vpc "v" → account "a"): flows: 33 flows, more than 32`},
		{"no source", Result{Edges: edge(Flow{To: "/x"})}, `edges[0] (vpc "v" → account "a"): flows[0]: set From (a JSON pointer`},
		{"two sources", Result{Edges: edge(FlowFrom("/a", "/a"), Flow{From: "/a", Expr: "status.a", To: "/b"})}, `flows[1]: set From or Expr, not both`},
		{"empty to", Result{Edges: edge(FlowFrom("/a", ""))}, `flows[0].to: "" is not a JSON pointer: it must start with '/'`},
		{"relative to", Result{Edges: edge(FlowFrom("/a", "account_id"))}, `flows[0].to: "account_id" is not a JSON pointer`},
		{"bad escape", Result{Edges: edge(FlowFrom("/a~2b", "/a"))}, `flows[0].from: "/a~2b" is not a JSON pointer: '~' must be followed by 0 or 1`},
		{"trailing tilde", Result{Edges: edge(FlowFrom("/a", "/a~"))}, `flows[0].to: "/a~" is not a JSON pointer`},
		{"long pointer", Result{Edges: edge(FlowFrom("/"+strings.Repeat("p", 1024), "/a"))}, `flows[0].from: 1025 characters, more than 1024`},
		{"long expr", Result{Edges: edge(FlowExpr(strings.Repeat("x", 4097), "/a"))}, `flows[0].expr: 4097 characters, more than 4096`},
		{"invalid expr", Result{Edges: edge(FlowExpr("\xff", "/a"))}, `flows[0].expr: not valid UTF-8`},
		{"duplicate edge", Result{Edges: append(edge(FlowFrom("/a", "/a")), edge(FlowFrom("/b", "/b"))...)},
			`edges[1] (vpc "v" → account "a"): same dependent and dependency as edges[0]`},
		{"bad reference", Result{References: []Ref{{Kind: "org", Name: "Root"}}}, `references[0] (org "Root"): reference.name: "Root" must be`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			comp, err := encodeComposition(&c.res)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("encodeComposition = %v, %v; want an error containing %q", comp, err, c.want)
			}
		})
	}
}

func TestEncodeCompositionAcceptsTheLimits(t *testing.T) {
	labels := map[string]string{}
	for i := range 64 {
		labels[fmt.Sprintf("example.com/k-%d", i)] = strings.Repeat("é", 253)
	}
	flows := make([]Flow, 32)
	for i := range flows {
		flows[i] = FlowFrom("/a~0b~1c/0", fmt.Sprintf("/b%d", i))
	}
	res := &Result{
		Children: []Child{
			{Kind: "aws.vpc-peering", KindVersion: 32767, Name: strings.Repeat("n", 253), Labels: labels,
				Spec: map[string]string{"x": strings.Repeat("x", maxChildSpecBytes-8)}},
			{Kind: "a", KindVersion: 1, Name: "0"},
		},
		Edges: []Edge{
			DependsOn(RefTo("a", "0"), RefTo("aws.vpc-peering", strings.Repeat("n", 253)), flows...),
			DependsOn(RefTo("a", "0"), Ref{Namespace: strings.Repeat("s", 63), Kind: "org", Name: "root"},
				FlowExpr(strings.Repeat("é", 4096), "/"+strings.Repeat("p", 1023))),
		},
		References: []Ref{{Namespace: strings.Repeat("s", 63), Kind: "org", Name: "root"}},
	}
	comp, err := encodeComposition(res)
	if err != nil {
		t.Fatalf("encodeComposition at the limits: %v", err)
	}
	if string(comp.GetChildren()[1].GetSpec()) != "{}" {
		t.Errorf("nil spec encoded as %q; want {}", comp.GetChildren()[1].GetSpec())
	}
	if rep := buildResult(&convergev1.Task{Lease: lease(1)}, res, nil); rep.result.GetSuccess() == nil {
		t.Fatalf("buildResult at the limits = %v; want success", rep.result.GetError())
	}
	// The handler's label map is copied: changing it later changes nothing sent.
	labels["late"] = "x"
	if _, ok := comp.GetChildren()[0].GetLabels()["late"]; ok {
		t.Error("the encoded child shares the handler's label map")
	}
}

func TestSplitCompositionKeepsPartsWithinBounds(t *testing.T) {
	res := zone(5000)
	for i := range 5000 {
		res.Edges = append(res.Edges, DependsOn(RefTo("account", fmt.Sprintf("lz-acct-%d", i)), RefTo("org", "root"),
			FlowFrom("/org_id", "/org_id")))
	}
	for i := range 250 {
		res.References = append(res.References, RefTo("org", fmt.Sprintf("r-%d", i)))
	}
	comp, err := encodeComposition(res)
	if err != nil {
		t.Fatal(err)
	}
	parts := splitComposition(comp)
	if len(parts) < 10 || len(parts) > 20 {
		t.Errorf("%d parts for 10,000 children and 10,000 edges; want 10 to 20", len(parts))
	}
	var children, edges, refs int
	for i, p := range parts {
		if len(p.GetChildren()) > maxPartChildren || len(p.GetEdges()) > maxPartEdges || len(p.GetReferences()) > maxPartReferences {
			t.Errorf("part %d holds %d children, %d edges, %d references; over the protocol's limits",
				i, len(p.GetChildren()), len(p.GetEdges()), len(p.GetReferences()))
		}
		if size := proto.Size(p); size > maxPartBytes {
			t.Errorf("part %d is %d bytes; over the budget of %d", i, size, maxPartBytes)
		}
		children += len(p.GetChildren())
		edges += len(p.GetEdges())
		refs += len(p.GetReferences())
	}
	if children != 10000 || edges != 10000 || refs != 250 {
		t.Fatalf("parts hold %d children, %d edges, %d references; want 10000, 10000, 250", children, edges, refs)
	}
	if got := splitComposition(&convergev1.Composition{}); len(got) != 1 || !isEmpty(got[0]) {
		t.Fatalf("an empty composition splits into %v; want one empty part", got)
	}
}

func TestSplitCompositionCutsBySize(t *testing.T) {
	// Children of ~300 KiB each: three to a part by count would be ~900 KiB
	// plus; the byte budget must cut first.
	var res Result
	for i := range 7 {
		res.Children = append(res.Children, Child{Kind: "blob", KindVersion: 1, Name: fmt.Sprintf("b-%d", i),
			Spec: map[string]string{"data": strings.Repeat("x", 300<<10)}})
	}
	comp, err := encodeComposition(&res)
	if err != nil {
		t.Fatal(err)
	}
	parts := splitComposition(comp)
	for i, p := range parts {
		if size := proto.Size(p); size > maxPartBytes {
			t.Errorf("part %d is %d bytes; over the budget of %d", i, size, maxPartBytes)
		}
	}
	if len(parts) != 3 {
		t.Errorf("%d parts for 7 children of 300 KiB; want 3", len(parts))
	}
}

func TestLastPartMovesToAChunkWhenTheResultIsFull(t *testing.T) {
	res := &Result{
		Status:   map[string]string{"big": strings.Repeat("s", 510<<10)},
		Children: []Child{{Kind: "blob", KindVersion: 1, Name: "b", Spec: map[string]string{"data": strings.Repeat("x", 510<<10)}}},
	}
	rep := buildResult(&convergev1.Task{Lease: lease(1)}, res, nil)
	success := rep.result.GetSuccess()
	if success == nil {
		t.Fatalf("result = %v; want success", rep.result)
	}
	if len(rep.chunks) != 1 || success.GetComposeChunks() != 1 || !isEmpty(success.GetComposition()) {
		t.Fatalf("%d chunks, compose_chunks %d, composition in the result %v; want the one part in a chunk",
			len(rep.chunks), success.GetComposeChunks(), success.GetComposition() != nil)
	}
	if size := proto.Size(rep.result); size > 1<<20 {
		t.Errorf("result is %d bytes; want under 1 MiB", size)
	}
	if got := rep.chunks[0].GetPart().GetChildren(); len(got) != 1 || got[0].GetName() != "b" {
		t.Errorf("chunk holds %v; want child b", got)
	}
}

func TestBuildResultReportsAnInvalidCompositionAsTerminal(t *testing.T) {
	res := zone(2)
	res.Edges[1].Flows[0].To = "account_id"
	rep := buildResult(&convergev1.Task{Lease: lease(1)}, res, nil)
	e := rep.result.GetError()
	if len(rep.chunks) != 0 || e == nil || !e.GetTerminal() ||
		e.GetMessage() != `converge: result edges[1] (vpc "lz-vpc-1" → account "lz-acct-1"): flows[0].to: "account_id" is not a JSON pointer: it must start with '/'` {
		t.Fatalf("buildResult = %v, %d chunks; want a terminal error naming edges[1]", rep.result, len(rep.chunks))
	}
}
