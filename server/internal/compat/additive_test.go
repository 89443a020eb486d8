package compat

import "testing"

// Additive changes: none may be reported.
func TestAdditive(t *testing.T) {
	tests := []struct{ name, old, new string }{
		{"new optional property",
			`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
			`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer","minimum":0}},"required":["a"]}`},
		{"new optional property in a closed object",
			`{"type":"object","properties":{"a":{}},"additionalProperties":false}`,
			`{"type":"object","properties":{"a":{},"b":{"type":"string"}},"additionalProperties":false}`},
		{"removed property of an open object", `{"type":"object","properties":{"a":{"type":"string"}}}`, `{"type":"object"}`},
		{"minimum lowered", `{"minimum":5}`, `{"minimum":1}`},
		{"maximum raised", `{"maximum":5}`, `{"maximum":50}`},
		{"bound removed", `{"type":"integer","minimum":0,"maximum":9}`, `{"type":"integer"}`},
		{"exclusiveMinimum to the same integer bound", `{"type":"integer","exclusiveMinimum":0}`, `{"type":"integer","minimum":1}`},
		{"maxLength raised", `{"type":"string","maxLength":8}`, `{"type":"string","maxLength":10}`},
		{"minItems lowered", `{"type":"array","minItems":2}`, `{"type":"array","minItems":1}`},
		{"multipleOf divides the old one", `{"multipleOf":4}`, `{"multipleOf":2}`},
		{"dropped requirement",
			`{"type":"object","properties":{"a":{},"b":{}},"required":["a","b"]}`,
			`{"type":"object","properties":{"a":{},"b":{}},"required":["a"]}`},
		{"enum extended", `{"enum":["TCP","UDP"]}`, `{"enum":["TCP","UDP","SCTP"]}`},
		{"const to an enum holding it", `{"const":"a"}`, `{"enum":["a","b"]}`},
		{"pattern removed", `{"type":"string","pattern":"^[a-z]+$"}`, `{"type":"string"}`},
		{"format removed", `{"type":"string","format":"email"}`, `{"type":"string"}`},
		{"unknown format added", `{"type":"string"}`, `{"type":"string","format":"kubernetes-name"}`},
		{"type widened", `{"type":"string"}`, `{"type":["string","null"]}`},
		{"integer to number", `{"type":"integer"}`, `{"type":"number"}`},
		{"annotations changed",
			`{"type":"object","title":"A","description":"old","properties":{"a":{"type":"string","default":"x","examples":["y"]}}}`,
			`{"type":"object","title":"B","description":"new","$comment":"c","properties":{"a":{"type":"string","default":"z","examples":["w"],"deprecated":true}}}`},
		{"additionalProperties false to true", `{"type":"object","additionalProperties":false}`, `{"type":"object","additionalProperties":true}`},
		{"additionalProperties schema removed", `{"type":"object","additionalProperties":{"type":"string"}}`, `{"type":"object"}`},
		{"additionalProperties false to a schema", `{"type":"object","additionalProperties":false}`, `{"type":"object","additionalProperties":{"type":"string"}}`},
		{"additionalProperties widened", `{"additionalProperties":{"type":"string"}}`, `{"additionalProperties":{"type":["string","number"]}}`},
		{"uniqueItems removed", `{"type":"array","uniqueItems":true}`, `{"type":"array"}`},
		{"anyOf branch added", `{"anyOf":[{"type":"string"}]}`, `{"anyOf":[{"type":"string"},{"type":"null"}]}`},
		{"type list to anyOf", `{"type":["string","integer"]}`, `{"anyOf":[{"type":"string"},{"type":"integer"}]}`},
		{"definition renamed",
			`{"$defs":{"port":{"type":"integer"}},"properties":{"p":{"$ref":"#/$defs/port"}}}`,
			`{"$defs":{"portNumber":{"type":"integer"}},"properties":{"p":{"$ref":"#/$defs/portNumber"}}}`},
		{"definition inlined",
			`{"$defs":{"port":{"type":"integer","minimum":1}},"properties":{"p":{"$ref":"#/$defs/port"}}}`,
			`{"properties":{"p":{"type":"integer","minimum":1}}}`},
		{"discriminated oneOf gains an optional property",
			`{"type":"object","oneOf":[{"properties":{"kind":{"const":"a"}},"required":["kind"]},{"properties":{"kind":{"const":"b"}},"required":["kind"]}]}`,
			`{"type":"object","oneOf":[{"properties":{"kind":{"const":"a"},"x":{"type":"string"}},"required":["kind"]},{"properties":{"kind":{"const":"b"}},"required":["kind"]}]}`},
		{"if/then unchanged, property added",
			`{"type":"object","if":{"required":["a"]},"then":{"required":["b"]}}`,
			`{"type":"object","properties":{"c":{"type":"string"}},"if":{"required":["a"]},"then":{"required":["b"]}}`},
		{"not of an excluded type", `{"type":"string"}`, `{"not":{"type":"integer"}}`},
		{"whole schema opened", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, `true`},
		{"recursive schema unchanged but annotated",
			`{"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}`,
			`{"$defs":{"n":{"type":"object","description":"a node","properties":{"next":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := run(t, tt.old, tt.new); len(got) > 0 {
				t.Errorf("Check reported an additive change:\n%q", lines(got))
			}
		})
	}
}
