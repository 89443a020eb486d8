package compat

import (
	"slices"
	"testing"
)

func TestNested(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     []string
	}{
		{"array of objects",
			`{"type":"object","properties":{"ports":{"type":"array","items":{"type":"object","properties":{"port":{"type":"integer"},"protocol":{"enum":["TCP","UDP"]}}}}}}`,
			`{"type":"object","properties":{"ports":{"type":"array","items":{"type":"object","properties":{"port":{"type":"integer"},"protocol":{"enum":["TCP"]}},"required":["port"]}}}}`,
			[]string{
				`/ports/*/port: newly-required: "port" is now required @/properties/ports/items/required`,
				`/ports/*/protocol: enum-restricted: enum was ["TCP","UDP"], now ["TCP"]: "UDP" no longer accepted @/properties/ports/items/properties/protocol/enum`,
			}},
		{"map values via additionalProperties",
			`{"type":"object","properties":{"labels":{"type":"object","additionalProperties":{"type":"string","maxLength":63}}}}`,
			`{"type":"object","properties":{"labels":{"type":"object","additionalProperties":{"type":"string","maxLength":32}}}}`,
			[]string{`/labels/*: narrowed: maxLength was 63, now 32 @/properties/labels/additionalProperties/maxLength`}},
		{"map of objects",
			`{"type":"object","additionalProperties":{"type":"object","properties":{"size":{"type":["integer","string"]}}}}`,
			`{"type":"object","additionalProperties":{"type":"object","properties":{"size":{"type":"integer"}}}}`,
			[]string{`/*/size: retyped: type was ["integer","string"], now "integer" @/additionalProperties/properties/size/type`}},
		{"$defs and $ref inside one document",
			`{"$defs":{"volume":{"type":"object","properties":{"size":{"type":"integer","minimum":1}}}},"type":"object","properties":{"volumes":{"type":"array","items":{"$ref":"#/$defs/volume"}},"root":{"$ref":"#/$defs/volume"}}}`,
			`{"$defs":{"volume":{"type":"object","properties":{"size":{"type":"integer","minimum":10}}}},"type":"object","properties":{"volumes":{"type":"array","items":{"$ref":"#/$defs/volume"}},"root":{"$ref":"#/$defs/volume"}}}`,
			[]string{
				`/root/size: narrowed: minimum was 1, now 10 @/$defs/volume/properties/size/minimum`,
				`/volumes/*/size: narrowed: minimum was 1, now 10 @/$defs/volume/properties/size/minimum`,
			}},
		{"escaped property names",
			`{"type":"object","properties":{"a/b":{"type":"string"},"c~d":{"type":"string"}}}`,
			`{"type":"object","properties":{"a/b":{"type":"integer"},"c~d":{"type":"integer"}}}`,
			[]string{
				`/a~1b: retyped: type was "string", now "integer" @/properties/a~1b/type`,
				`/c~0d: retyped: type was "string", now "integer" @/properties/c~0d/type`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := lines(run(t, tt.old, tt.new)); !slices.Equal(got, tt.want) {
				t.Errorf("Check:\n got  %q\n want %q", got, tt.want)
			}
		})
	}
}

// TestManyChanges checks a realistic spec schema changed in many ways at
// once, additive and breaking, and the exact sorted list of findings.
func TestManyChanges(t *testing.T) {
	old := `{
	  "type": "object",
	  "required": ["image"],
	  "properties": {
	    "image": {"type": "string", "pattern": "^[a-z0-9./-]+$"},
	    "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
	    "tier": {"enum": ["dev", "staging", "prod"]},
	    "env": {"type": "object", "additionalProperties": {"type": "string"}},
	    "ports": {"type": "array", "items": {"type": "object", "properties": {
	      "port": {"type": "integer"}, "protocol": {"type": ["string", "null"]}}}},
	    "debug": {"type": "boolean"},
	    "owner": {"type": "string"}
	  },
	  "additionalProperties": false
	}`
	new := `{
	  "type": "object",
	  "required": ["image", "owner"],
	  "description": "annotations never count",
	  "properties": {
	    "image": {"type": "string", "pattern": "^[a-z0-9./:-]+$"},
	    "replicas": {"type": "integer", "minimum": 2, "maximum": 20},
	    "tier": {"enum": ["dev", "prod", "test"]},
	    "env": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 256}},
	    "ports": {"type": "array", "uniqueItems": true, "items": {"type": "object", "properties": {
	      "port": {"type": "integer", "maximum": 65535}, "protocol": {"type": "string"}}}},
	    "owner": {"type": "string", "format": "email"},
	    "region": {"type": "string"}
	  },
	  "additionalProperties": false
	}`
	want := []string{
		`/debug: removed: property "debug" was removed and additionalProperties is false @/additionalProperties`,
		`/env/*: narrowed: maxLength 256 added @/properties/env/additionalProperties/maxLength`,
		`/image: pattern-added: pattern was "^[a-z0-9./-]+$", now "^[a-z0-9./:-]+$" @/properties/image/pattern`,
		`/owner: format-added: format "email" added @/properties/owner/format`,
		`/owner: newly-required: "owner" is now required @/required`,
		`/ports: unique-items: uniqueItems added: arrays with repeated items are no longer accepted @/properties/ports/uniqueItems`,
		`/ports/*/port: narrowed: maximum 65535 added @/properties/ports/items/properties/port/maximum`,
		`/ports/*/protocol: retyped: type was ["null","string"], now "string" @/properties/ports/items/properties/protocol/type`,
		`/replicas: narrowed: minimum was 1, now 2 @/properties/replicas/minimum`,
		`/tier: enum-restricted: enum was ["dev","staging","prod"], now ["dev","prod","test"]: "staging" no longer accepted @/properties/tier/enum`,
	}
	if got := lines(run(t, old, new)); !slices.Equal(got, want) {
		t.Errorf("Check:\n got  %q\n want %q", got, want)
	}
}
