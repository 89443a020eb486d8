package document_test

import (
	"fmt"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/conctl/document"
)

func ExampleParse() {
	docs, err := document.Parse("hello.yaml", []byte(`
type: resource
kind: greeting
kind_version: 1
name: hello-world
spec:
  greeting: Hello
---
type: resource
kind: greeting
kind_version: 1
name: typo
spce: {}
`))
	for _, d := range docs {
		r := d.Message.(*convergev1.ApplyResourceRequest)
		fmt.Println(d.Where(), d.Type, r.GetNamespace(), r.GetName())
	}
	fmt.Println(err)
	// Output:
	// hello.yaml: document 1 (line 2) resource default hello-world
	// hello.yaml: document 2 (line 13): unknown field "spce" (did you mean "spec"?)
}
