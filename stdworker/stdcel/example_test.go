package stdcel_test

import (
	"context"
	"fmt"

	"github.com/convergehq/converge/stdworker/stdcel"
)

// A graph is compiled once against the schemas of the kinds it uses, then
// composes every instance: values known now are filled in, and a value
// read from another resource becomes a flow the server evaluates.
func Example() {
	def, err := stdcel.DecodeDefinition([]byte(`{
	  "kind": "webapp", "version": 1,
	  "spec_fields": {"image": "string | required"},
	  "resources": [
	    {"id": "db", "kind": "database", "version": 1, "template": {"spec": {"engine": "postgres"}}},
	    {"id": "app", "kind": "service", "version": 1,
	     "template": {"spec": {"image": "${schema.spec.image}", "db": "${db.status.host}:5432"}}}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	lookup := func(_ context.Context, kind string, _ int) (*stdcel.KindSchemas, error) {
		switch kind {
		case "database":
			return &stdcel.KindSchemas{
				Spec:   map[string]any{"type": "object", "properties": map[string]any{"engine": map[string]any{"type": "string"}}},
				Status: map[string]any{"type": "object", "properties": map[string]any{"host": map[string]any{"type": "string"}}},
			}, nil
		case "service":
			return &stdcel.KindSchemas{Spec: map[string]any{"type": "object", "properties": map[string]any{
				"image": map[string]any{"type": "string"}, "db": map[string]any{"type": "string"}}}}, nil
		}
		return nil, stdcel.ErrUnknownKind
	}
	g, err := stdcel.Compile(context.Background(), def, lookup)
	if err != nil {
		fmt.Println(err)
		return
	}
	plan, err := g.Compose(stdcel.Instance{Namespace: "default", Name: "shop", Spec: map[string]any{"image": "shop:1"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range plan.Children() {
		fmt.Println(c.Kind, c.Name, c.Spec)
	}
	for _, e := range plan.Edges {
		fmt.Println(e.Dependent.Name, "waits for", e.Dependency.Name, "and gets", e.Flows[0].To, "=", e.Flows[0].Expr)
	}
	// Output:
	// database shop-db map[engine:postgres]
	// service shop-app map[image:shop:1]
	// shop-app waits for shop-db and gets /db = string(status.host) + ":5432"
}

// A graph with mistakes is rejected with every problem, its path and its
// position in the expression.
func ExampleCheckError() {
	def, _ := stdcel.DecodeDefinition([]byte(`{
	  "kind": "webapp", "version": 1,
	  "spec_fields": {"image": "string | required"},
	  "resources": [{"id": "app", "kind": "service", "version": 1,
	     "template": {"spec": {"image": "${schema.spec.imgae}", "db": "${dbb.status.host}"}}}]}`))
	lookup := func(context.Context, string, int) (*stdcel.KindSchemas, error) { return &stdcel.KindSchemas{}, nil }
	_, err := stdcel.Compile(context.Background(), def, lookup)
	fmt.Println(err)
	// Output:
	// the graph has 2 problem(s):
	// resources[0].template.spec.db:1:1: unknown name "dbb": the instance's inputs are schema.spec.<field>, and the graph's resource ids are app
	// resources[0].template.spec.image:1:12: undefined field 'imgae'
}
