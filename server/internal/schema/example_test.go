package schema_test

import (
	"fmt"

	"github.com/convergehq/converge/server/internal/schema"
)

func ExampleCompile() {
	doc, err := schema.Decode([]byte(`{"type":"object","properties":{"replicas":{"type":"int"}}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = schema.Compile("spec_schema", doc)
	fmt.Println(err)
	// Output:
	// spec_schema/properties/replicas/type: must be one of "array", "boolean", "integer", "null", "number", "object", "string"
}

func ExampleSchema_Validate() {
	doc, _ := schema.Decode([]byte(`{
		"type": "object",
		"required": ["name"],
		"properties": {"replicas": {"type": "integer", "minimum": 1}}
	}`))
	spec, err := schema.Compile("spec_schema", doc)
	if err != nil {
		fmt.Println(err)
		return
	}
	instance, _ := schema.Decode([]byte(`{"replicas": 0}`))
	fmt.Println(spec.Validate(instance))
	// Output:
	// /: missing required property "name"; /replicas: must be >= 1
}

func ExampleDecode() {
	v, err := schema.Decode([]byte(`{"id": 9007199254740993}`))
	fmt.Println(v, err)
	_, err = schema.Decode([]byte(`{"a": 1, "a": 2}`))
	fmt.Println(err)
	// Output:
	// map[id:9007199254740993] <nil>
	// json: /: duplicate key "a"
}

func ExampleEqualJSON() {
	a, _ := schema.Decode([]byte(`{"replicas": 3, "zones": ["a", "b"]}`))
	b, _ := schema.Decode([]byte(`{"zones": ["a", "b"], "replicas": 3.0}`))
	fmt.Println(schema.EqualJSON(a, b))
	// Output: true
}

func ExampleJoinPointer() {
	ptr := schema.JoinPointer("/properties", "a/b", "items")
	fmt.Println(ptr)
	tok, _ := schema.UnescapeToken("a~1b")
	fmt.Println(tok)
	// Output:
	// /properties/a~1b/items
	// a/b
}
