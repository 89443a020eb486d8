package schema

import (
	"errors"
	"testing"
)

var fuzzSchemas = []string{
	deploymentSchema,
	`{}`,
	`false`,
	`{"$defs":{"node":{"type":"object","properties":{"next":{"$ref":"#/$defs/node"}},"unevaluatedProperties":false}},"$ref":"#/$defs/node"}`,
	`{"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"items":false,"contains":{"type":"integer"},"maxContains":1}`,
	`{"if":{"required":["a"]},"then":{"required":["b"]},"else":{"not":{"required":["c"]}},"dependentSchemas":{"d":{"minProperties":3}}}`,
	`{"oneOf":[{"multipleOf":0.5},{"multipleOf":3}],"anyOf":[{"exclusiveMinimum":-1e300},{"format":"ipv4"}]}`,
	`{"patternProperties":{"^x-":{"type":"string"}},"propertyNames":{"minLength":1},"additionalProperties":{"enum":[[1,{"a":null}],{"b":[]}]}}`,
}

func FuzzCompile(f *testing.F) {
	for _, s := range fuzzSchemas {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}}`))
	f.Add([]byte(`{"$id":"a.json","$defs":{"x":{"$id":"a.json"}},"$dynamicRef":"#meta","$dynamicAnchor":"meta"}`))
	f.Add([]byte(`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Decode(data)
		if err != nil {
			return
		}
		sch, err := Compile("fuzz", doc)
		if err != nil {
			var ce *CompileError
			if !errors.As(err, &ce) || len(ce.Violations) == 0 {
				t.Fatalf("Compile error %v (%T) has no violations", err, err)
			}
			_ = ce.Error()
			return
		}
		// A schema that compiles must also validate (itself, as an
		// arbitrary instance) without panicking.
		if err := sch.Validate(doc); err != nil {
			_ = err.Error()
		}
	})
}

func FuzzValidate(f *testing.F) {
	schemas := make([]*Schema, 0, len(fuzzSchemas))
	for _, s := range fuzzSchemas {
		schemas = append(schemas, mustCompile(f, s))
	}
	f.Add([]byte(`{"name":"abc","replicas":2,"labels":{"A":1}}`))
	f.Add([]byte(`[1,"x",3,4]`))
	f.Add([]byte(`{"next":{"next":{"x":1}}}`))
	f.Add([]byte(`{"a":1,"b":2,"d":{},"x-y":3,"q":[1,{"a":null}]}`))
	f.Add([]byte(`1.5e300`))
	f.Fuzz(func(t *testing.T, data []byte) {
		instance, err := Decode(data)
		if err != nil {
			return
		}
		for _, sch := range schemas {
			err := sch.Validate(instance)
			if err == nil {
				continue
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Violations) == 0 {
				t.Fatalf("Validate error %v (%T) has no violations", err, err)
			}
			_ = ve.Error()
		}
	})
}
