package compat

import (
	"slices"
	"testing"
)

// Each breaking class with a minimal old/new pair and the exact findings,
// rendered as "path: reason: detail @schema".
func TestBreaking(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     []string
	}{
		// Removed properties.
		{"removed under additionalProperties false",
			`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"additionalProperties":false}`,
			`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`,
			[]string{`/b: removed: property "b" was removed and additionalProperties is false @/additionalProperties`}},
		{"removed under a narrower additionalProperties",
			`{"type":"object","properties":{"a":{"type":"string"},"n":{"type":"integer"}}}`,
			`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{"type":"string"}}`,
			[]string{
				`/*: additional-properties: additionalProperties was absent, now {"type":"string"} @/additionalProperties`,
				`/n: removed: property "n" was removed and now falls under additionalProperties, which refuses some of its old values (type was "integer", now "string") @/additionalProperties`,
			}},
		{"property schema became false",
			`{"type":"object","properties":{"a":{"type":"string"}}}`,
			`{"type":"object","properties":{"a":false}}`,
			[]string{`/a: removed: the new schema is false here: no value is accepted @/properties/a`}},
		// Types.
		{"type changed",
			`{"properties":{"a":{"type":"string"}}}`,
			`{"properties":{"a":{"type":"integer"}}}`,
			[]string{`/a: retyped: type was "string", now "integer" @/properties/a/type`}},
		{"type narrowed",
			`{"properties":{"a":{"type":["string","null"]}}}`,
			`{"properties":{"a":{"type":"string"}}}`,
			[]string{`/a: retyped: type was ["null","string"], now "string" @/properties/a/type`}},
		{"number to integer",
			`{"properties":{"a":{"type":"number"}}}`,
			`{"properties":{"a":{"type":"integer"}}}`,
			[]string{`/a: retyped: type was "number", now "integer" @/properties/a/type`}},
		{"type added",
			`{"properties":{"a":{}}}`,
			`{"properties":{"a":{"type":"string"}}}`,
			[]string{`/a: retyped: type "string" added: values of any type were accepted @/properties/a/type`}},
		// Required.
		{"newly required",
			`{"properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"]}`,
			`{"properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a","b"]}`,
			[]string{`/b: newly-required: "b" is now required @/required`}},
		{"newly required via dependentRequired",
			`{"properties":{"a":{},"b":{}}}`,
			`{"properties":{"a":{},"b":{}},"dependentRequired":{"a":["b"]}}`,
			[]string{`/b: newly-required: "b" is now required when "a" is present @/dependentRequired/a`}},
		// Bounds.
		{"minimum raised", `{"minimum":1}`, `{"minimum":5}`, []string{`/: narrowed: minimum was 1, now 5 @/minimum`}},
		{"maximum lowered", `{"maximum":10}`, `{"maximum":9.5}`, []string{`/: narrowed: maximum was 10, now 9.5 @/maximum`}},
		{"minimum added", `{"type":"number"}`, `{"type":"number","minimum":0}`, []string{`/: narrowed: minimum 0 added @/minimum`}},
		{"exclusiveMinimum tightened", `{"exclusiveMinimum":0}`, `{"exclusiveMinimum":1}`, []string{`/: narrowed: exclusiveMinimum was 0, now 1 @/exclusiveMinimum`}},
		{"exclusiveMaximum replaces maximum", `{"maximum":5}`, `{"exclusiveMaximum":5}`, []string{`/: narrowed: exclusiveMaximum 5 replaces maximum 5 @/exclusiveMaximum`}},
		{"multipleOf changed", `{"multipleOf":2}`, `{"multipleOf":4}`, []string{`/: narrowed: multipleOf was 2, now 4 @/multipleOf`}},
		{"minLength raised", `{"type":"string","minLength":1}`, `{"type":"string","minLength":3}`, []string{`/: narrowed: minLength was 1, now 3 @/minLength`}},
		{"maxLength lowered", `{"type":"string","maxLength":10}`, `{"type":"string","maxLength":8}`, []string{`/: narrowed: maxLength was 10, now 8 @/maxLength`}},
		{"minItems raised", `{"type":"array"}`, `{"type":"array","minItems":1}`, []string{`/: narrowed: minItems 1 added @/minItems`}},
		{"maxItems lowered", `{"type":"array","maxItems":5}`, `{"type":"array","maxItems":4}`, []string{`/: narrowed: maxItems was 5, now 4 @/maxItems`}},
		{"minProperties raised", `{"type":"object"}`, `{"type":"object","minProperties":1}`, []string{`/: narrowed: minProperties 1 added @/minProperties`}},
		{"maxProperties lowered", `{"type":"object","maxProperties":3}`, `{"type":"object","maxProperties":2}`, []string{`/: narrowed: maxProperties was 3, now 2 @/maxProperties`}},
		// Enum and const.
		{"enum restricted",
			`{"enum":["TCP","UDP","SCTP"]}`, `{"enum":["TCP","UDP"]}`,
			[]string{`/: enum-restricted: enum was ["TCP","UDP","SCTP"], now ["TCP","UDP"]: "SCTP" no longer accepted @/enum`}},
		{"enum added", `{"type":"string"}`, `{"type":"string","enum":["a","b"]}`, []string{`/: enum-restricted: enum ["a","b"] added @/enum`}},
		{"const added", `{"type":"string"}`, `{"const":"a"}`, []string{
			`/: enum-restricted: const "a" added @/const`,
		}},
		{"const changed", `{"const":"a"}`, `{"const":"b"}`, []string{`/: enum-restricted: const was "a", now const "b": "a" no longer accepted @/const`}},
		// Pattern and format.
		{"pattern added", `{"type":"string"}`, `{"type":"string","pattern":"^[a-z]+$"}`, []string{`/: pattern-added: pattern "^[a-z]+$" added @/pattern`}},
		{"pattern changed", `{"type":"string","pattern":"^[a-z]+$"}`, `{"type":"string","pattern":"^[a-z0-9]+$"}`,
			[]string{`/: pattern-added: pattern was "^[a-z]+$", now "^[a-z0-9]+$" @/pattern`}},
		{"format added", `{"type":"string"}`, `{"type":"string","format":"email"}`, []string{`/: format-added: format "email" added @/format`}},
		{"format changed", `{"type":"string","format":"email"}`, `{"type":"string","format":"uri"}`, []string{`/: format-added: format was "email", now "uri" @/format`}},
		// Object shape.
		{"additionalProperties true to false",
			`{"type":"object","properties":{"a":{}},"additionalProperties":true}`,
			`{"type":"object","properties":{"a":{}},"additionalProperties":false}`,
			[]string{`/*: additional-properties: additionalProperties was true, now false @/additionalProperties`}},
		{"additionalProperties schema to false",
			`{"type":"object","additionalProperties":{"type":"string"}}`,
			`{"type":"object","additionalProperties":false}`,
			[]string{`/*: additional-properties: additionalProperties was {"type":"string"}, now false @/additionalProperties`}},
		{"patternProperties added",
			`{"type":"object"}`,
			`{"type":"object","patternProperties":{"^x-":{"type":"string"}}}`,
			[]string{`/*: pattern-properties: patternProperties "^x-" added: properties whose names match it were unconstrained @/patternProperties/^x-`}},
		{"propertyNames added",
			`{"type":"object"}`,
			`{"type":"object","propertyNames":{"pattern":"^[a-z]+$"}}`,
			[]string{`/: property-names: propertyNames added: pattern "^[a-z]+$" added @/propertyNames`}},
		{"propertyNames refuses a declared property",
			`{"type":"object","properties":{"Name":{}},"additionalProperties":false}`,
			`{"type":"object","properties":{"Name":{}},"additionalProperties":false,"propertyNames":{"pattern":"^[a-z]+$"}}`,
			[]string{`/Name: property-names: propertyNames refuses "Name", a property the old schema declared @/propertyNames`}},
		// Arrays.
		{"items narrowed",
			`{"type":"array","items":{"type":"object","properties":{"port":{"type":"integer"}}}}`,
			`{"type":"array","items":{"type":"object","properties":{"port":{"type":"integer","maximum":65535}}}}`,
			[]string{`/*/port: narrowed: maximum 65535 added @/items/properties/port/maximum`}},
		{"prefixItems narrowed",
			`{"type":"array","prefixItems":[{"type":"string"},{"type":"number"}]}`,
			`{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]}`,
			[]string{`/1: retyped: type was "number", now "integer" @/prefixItems/1/type`}},
		{"items false cuts tuples short",
			`{"type":"array","prefixItems":[{"type":"string"}]}`,
			`{"type":"array","prefixItems":[{"type":"string"}],"items":false}`,
			[]string{`/: narrowed: items is now false: arrays may have at most 1 item @/items`}},
		{"uniqueItems added", `{"type":"array"}`, `{"type":"array","uniqueItems":true}`,
			[]string{`/: unique-items: uniqueItems added: arrays with repeated items are no longer accepted @/uniqueItems`}},
		{"contains added", `{"type":"array"}`, `{"type":"array","contains":{"const":"x"}}`,
			[]string{`/: contains: contains added: arrays must now have at least 1 matching item @/contains`}},
		{"minContains raised", `{"type":"array","contains":{"const":"x"}}`, `{"type":"array","contains":{"const":"x"},"minContains":2}`,
			[]string{`/: contains: contains changed: arrays must now have at least 2 items matching the new schema @/contains`}},
		// Composition.
		{"allOf branch narrowed",
			`{"allOf":[{"type":"object"},{"properties":{"a":{"type":"string"}}}]}`,
			`{"allOf":[{"type":"object"},{"properties":{"a":{"type":"string","maxLength":3}}}]}`,
			[]string{`/a: narrowed: maxLength 3 added @/allOf/1/properties/a/maxLength`}},
		{"$ref target narrowed",
			`{"$defs":{"port":{"type":"integer","minimum":1}},"properties":{"p":{"$ref":"#/$defs/port"}}}`,
			`{"$defs":{"port":{"type":"integer","minimum":1,"maximum":1024}},"properties":{"p":{"$ref":"#/$defs/port"}}}`,
			[]string{`/p: narrowed: maximum 1024 added @/$defs/port/maximum`}},
		{"anyOf branch removed",
			`{"anyOf":[{"type":"string"},{"type":"integer"}]}`,
			`{"anyOf":[{"type":"string"}]}`,
			[]string{`/: retyped: type was "integer", now "string" @/anyOf/0/type`}},
		{"anyOf branch narrowed",
			`{"anyOf":[{"type":"string"},{"type":"integer","minimum":0}]}`,
			`{"anyOf":[{"type":"string"},{"type":"integer","minimum":1}]}`,
			[]string{`/: narrowed: minimum was 0, now 1 @/anyOf/1/minimum`}},
		{"oneOf branches may overlap",
			`{"type":"object","properties":{"a":{"type":"string"}}}`,
			`{"type":"object","oneOf":[{"properties":{"a":{"type":"string"}}},{"required":["b"]}]}`,
			[]string{`/: unproven: oneOf: old values match branch 0 but cannot be shown not to match branch 1 too, and oneOf refuses a value that matches two branches @/oneOf`}},
		{"not added",
			`{"type":"string"}`,
			`{"type":"string","not":{"const":"admin"}}`,
			[]string{`/: unproven: not: cannot prove that no value the old schema accepted matches the "not" schema @/not`}},
		{"if/then added",
			`{"type":"object","properties":{"tier":{"type":"string"},"backup":{"type":"boolean"}}}`,
			`{"type":"object","properties":{"tier":{"type":"string"},"backup":{"type":"boolean"}},"if":{"properties":{"tier":{"const":"prod"}},"required":["tier"]},"then":{"required":["backup"]}}`,
			[]string{`/backup: newly-required: "backup" is now required @/then/required`}},
		{"dependentSchemas added",
			`{"type":"object","properties":{"a":{},"b":{"type":"integer"}}}`,
			`{"type":"object","properties":{"a":{},"b":{"type":"integer"}},"dependentSchemas":{"a":{"properties":{"b":{"minimum":0}}}}}`,
			[]string{`/b: narrowed: minimum 0 added @/dependentSchemas/a/properties/b/minimum`}},
		{"unevaluatedProperties beside applicators",
			`{"type":"object","allOf":[{"properties":{"a":{}}}]}`,
			`{"type":"object","allOf":[{"properties":{"a":{}}}],"unevaluatedProperties":false}`,
			[]string{`/: unproven: unevaluatedProperties next to in-place applicators ($ref, allOf, anyOf, oneOf, if, dependentSchemas) cannot be compared @/unevaluatedProperties`}},
		{"whole schema became false", `{"type":"object"}`, `false`, []string{`/: removed: the new schema is false here: no value is accepted @`}},
		{"reference cycle", `{"type":"object"}`, `{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`,
			[]string{`/: unproven: the new schema's references form a cycle here, so it refuses every value @/$defs/a`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := lines(run(t, tt.old, tt.new))
			if !slices.Equal(got, tt.want) {
				t.Errorf("Check:\n got  %q\n want %q", got, tt.want)
			}
		})
	}
}
