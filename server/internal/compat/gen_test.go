package compat

import (
	"fmt"
	"math/rand"
)

// gen builds small random schemas and instances from a vocabulary chosen
// so that random values often hit the keywords' edges.
type gen struct {
	r *rand.Rand
}

var (
	genNames    = []string{"a", "b", "c"}
	genPatterns = []string{"^a", "b", "^[ab]*$", "^x-"}
	genStrings  = []any{"", "a", "ab", "b", "ba", "x-a", "2020-01-02", "x@y.z"}
	genNumbers  = []any{-2.0, -1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0}
	genTypes    = []string{"null", "boolean", "object", "array", "number", "string", "integer"}
)

func (g *gen) pick(n int) int { return g.r.Intn(n) }

func (g *gen) scalar() any {
	switch g.pick(5) {
	case 0:
		return nil
	case 1:
		return g.pick(2) == 0
	case 2, 3:
		return genStrings[g.pick(len(genStrings))]
	}
	return genNumbers[g.pick(len(genNumbers))]
}

// value is a random instance.
func (g *gen) value(depth int) any {
	if depth <= 0 || g.pick(3) > 0 {
		return g.scalar()
	}
	if g.pick(2) == 0 {
		arr := []any{}
		for range g.pick(4) {
			arr = append(arr, g.value(depth-1))
		}
		return arr
	}
	obj := map[string]any{}
	for range g.pick(4) {
		names := append(genNames, "d", "x-a")
		obj[names[g.pick(len(names))]] = g.value(depth - 1)
	}
	return obj
}

// schema is a random subschema; root adds $defs so "$ref" can be used.
func (g *gen) schema(depth int) any {
	if depth <= 0 || g.pick(6) == 0 {
		switch g.pick(4) {
		case 0:
			return true
		case 1:
			return map[string]any{}
		}
	}
	m := map[string]any{}
	for range 1 + g.pick(3) {
		g.keyword(m, depth)
	}
	return m
}

func (g *gen) keyword(m map[string]any, depth int) {
	sub := func() any { return g.schema(depth - 1) }
	switch g.pick(32) {
	case 0, 1:
		if g.pick(2) == 0 {
			m["type"] = genTypes[g.pick(len(genTypes))]
		} else {
			m["type"] = []any{genTypes[g.pick(len(genTypes))], genTypes[g.pick(len(genTypes))]}
		}
	case 2:
		var vs []any
		for range 1 + g.pick(3) {
			vs = append(vs, g.scalar())
		}
		m["enum"] = vs
	case 3:
		m["const"] = g.scalar()
	case 4:
		kws := []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
		m[kws[g.pick(4)]] = genNumbers[g.pick(len(genNumbers))]
	case 5:
		m["multipleOf"] = []any{1.0, 2.0, 0.5}[g.pick(3)]
	case 6:
		m[[]string{"minLength", "maxLength"}[g.pick(2)]] = float64(g.pick(3))
	case 7:
		m["pattern"] = genPatterns[g.pick(len(genPatterns))]
	case 8:
		m["format"] = []string{"date", "email", "custom"}[g.pick(3)]
	case 9, 10, 11:
		props := map[string]any{}
		for range 1 + g.pick(2) {
			props[genNames[g.pick(len(genNames))]] = sub()
		}
		m["properties"] = props
	case 12:
		m["required"] = []any{genNames[g.pick(len(genNames))]}
	case 13:
		if g.pick(2) == 0 {
			m["additionalProperties"] = g.pick(2) == 0
		} else {
			m["additionalProperties"] = sub()
		}
	case 14:
		m["patternProperties"] = map[string]any{genPatterns[g.pick(len(genPatterns))]: sub()}
	case 15:
		m["propertyNames"] = map[string]any{"pattern": genPatterns[g.pick(len(genPatterns))]}
	case 16:
		m["items"] = sub()
	case 17:
		m["prefixItems"] = []any{sub(), sub()}[:1+g.pick(2)]
	case 18:
		m[[]string{"minItems", "maxItems", "minProperties", "maxProperties"}[g.pick(4)]] = float64(g.pick(3))
	case 19:
		m["uniqueItems"] = true
	case 20:
		m["contains"] = sub()
		if g.pick(2) == 0 {
			m[[]string{"minContains", "maxContains"}[g.pick(2)]] = float64(g.pick(3))
		}
	case 21:
		m["allOf"] = []any{sub(), sub()}
	case 22, 23:
		m["anyOf"] = []any{sub(), sub()}
	case 24:
		m["oneOf"] = []any{sub(), sub()}
	case 25:
		m["not"] = sub()
	case 26:
		m["if"] = sub()
		m["then"] = sub()
		if g.pick(2) == 0 {
			m["else"] = sub()
		}
	case 27:
		m["dependentRequired"] = map[string]any{genNames[g.pick(3)]: []any{genNames[g.pick(3)]}}
	case 28:
		m["dependentSchemas"] = map[string]any{genNames[g.pick(3)]: sub()}
	case 29:
		m["$ref"] = "#/$defs/d"
	case 30:
		m["unevaluatedProperties"] = []any{false, map[string]any{"type": "string"}}[g.pick(2)]
	case 31:
		m["dependencies"] = map[string]any{genNames[g.pick(3)]: []any{genNames[g.pick(3)]}}
	}
}

// root is a random document with a "$defs/d" the "$ref"s can reach.
func (g *gen) root() any {
	s := g.schema(3)
	m, ok := s.(map[string]any)
	if !ok {
		return s
	}
	m["$defs"] = map[string]any{"d": g.schema(2)}
	return m
}

// mutate returns a copy of a document with one small random change.
func (g *gen) mutate(v any, depth int) any {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 || g.pick(4) == 0 || depth > 4 {
		if g.pick(3) == 0 {
			return g.schema(2)
		}
		out := copyMap(m)
		if out == nil {
			out = map[string]any{}
		}
		g.keyword(out, 2)
		return out
	}
	out := copyMap(m)
	keys := sortedKeys(out)
	k := keys[g.pick(len(keys))]
	switch x := out[k].(type) {
	case map[string]any:
		if isSchemaMap(k) && len(x) > 0 {
			inner := copyMap(x)
			ik := sortedKeys(inner)[g.pick(len(x))]
			inner[ik] = g.mutate(inner[ik], depth+1)
			out[k] = inner
		} else {
			out[k] = g.mutate(x, depth+1)
		}
	case []any:
		if isSchemaList(k) && len(x) > 0 {
			arr := append([]any(nil), x...)
			i := g.pick(len(arr))
			arr[i] = g.mutate(arr[i], depth+1)
			out[k] = arr
		} else {
			delete(out, k)
		}
	default:
		if g.pick(2) == 0 {
			delete(out, k)
		} else {
			g.keyword(out, 2)
		}
	}
	return out
}

func isSchemaMap(k string) bool {
	switch k {
	case "properties", "patternProperties", "dependentSchemas", "$defs":
		return true
	}
	return false
}

func isSchemaList(k string) bool {
	switch k {
	case "allOf", "anyOf", "oneOf", "prefixItems":
		return true
	}
	return false
}

func copyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// annotate returns a deep copy of a document with annotations added
// everywhere, which must never count as a change.
func annotate(v any, n *int) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x)+1)
		for k, val := range x {
			switch {
			case isSchemaMap(k):
				inner := map[string]any{}
				if vm, ok := val.(map[string]any); ok {
					for ik, iv := range vm {
						inner[ik] = annotate(iv, n)
					}
					out[k] = inner
					continue
				}
				out[k] = val
			case isSchemaList(k):
				if arr, ok := val.([]any); ok {
					na := make([]any, len(arr))
					for i, iv := range arr {
						na[i] = annotate(iv, n)
					}
					out[k] = na
					continue
				}
				out[k] = val
			case k == "items" || k == "not" || k == "if" || k == "then" || k == "else" || k == "contains" ||
				k == "additionalProperties" || k == "propertyNames" || k == "unevaluatedProperties":
				out[k] = annotate(val, n)
			default:
				out[k] = val
			}
		}
		*n++
		out["description"] = fmt.Sprintf("note %d", *n)
		return out
	}
	return v
}
