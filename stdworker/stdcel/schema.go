package stdcel

import (
	"encoding/json"
	"strings"

	celchecker "cel.dev/cel-go/checker"
	"cel.dev/cel-go/common/types"

	"github.com/convergehq/converge/internal/celschema"
)

// statusProjection checks the graph's status projection against
// status_schema, or derives status_schema from the expressions' types.
func (c *checker) statusProjection(g *Graph, def *Definition, sc *scope) {
	status := map[string]any{}
	if def.Status != nil {
		status = def.Status
	}
	if def.StatusSchema != nil {
		if ts := celschema.Types(def.StatusSchema); len(ts) > 0 && !containsStr(ts, "object") {
			c.ps.add("status_schema.type", "must allow \"object\": an instance's status is a JSON object")
		}
		g.status = c.template(sc, "status", status, def.StatusSchema)
		g.statusSchema = def.StatusSchema
		v, err := statusValidator(def.StatusSchema)
		if err != nil {
			c.ps.add("status_schema", "does not compile: %v", err)
		}
		g.statusCheck = v
		return
	}
	g.status = c.template(sc, "status", status, nil)
	g.statusSchema = deriveSchema(g.status)
}

// deriveSchema is the JSON Schema of what a template produces. Nothing is
// required: a projected field is left out until its value exists.
func deriveSchema(t *tmpl) map[string]any {
	switch t.kind {
	case tObject:
		props := map[string]any{}
		for _, k := range t.keys {
			props[k] = deriveSchema(t.fields[k])
		}
		return map[string]any{"type": "object", "properties": props}
	case tArray:
		return map[string]any{"type": "array"}
	case tInterp:
		return map[string]any{"type": "string"}
	case tExpr:
		if t.whole == nil {
			return map[string]any{}
		}
		return schemaOfType(t.whole.out)
	}
	if lt := literalType(t.lit); lt != "" {
		return map[string]any{"type": lt}
	}
	return map[string]any{}
}

// schemaOfType is the JSON Schema of values of CEL type t.
func schemaOfType(t *types.Type) map[string]any {
	switch t.Kind() {
	case types.StringKind, types.TimestampKind, types.DurationKind:
		return map[string]any{"type": "string"}
	case types.IntKind, types.UintKind:
		return map[string]any{"type": "integer"}
	case types.DoubleKind:
		return map[string]any{"type": "number"}
	case types.BoolKind:
		return map[string]any{"type": "boolean"}
	case types.NullTypeKind:
		return map[string]any{"type": "null"}
	case types.ListKind:
		return map[string]any{"type": "array", "items": schemaOfType(t.Parameters()[0])}
	case types.MapKind, types.StructKind:
		return map[string]any{"type": "object"}
	case types.OpaqueKind:
		if t.TypeName() == "optional_type" && len(t.Parameters()) == 1 {
			return schemaOfType(t.Parameters()[0])
		}
	}
	return map[string]any{}
}

// compactSchema turns the compact form of a spec schema into JSON Schema.
// Each field maps to "type | marker | ...", with type one of string,
// integer, number, boolean, object, []T or map[string]T, and markers
// required, default=<json>, minimum=<n>, maximum=<n>, enum=a,b,c,
// description=<text>; a nested map is an object with those fields.
func compactSchema(ps *problems, path string, fields map[string]any) map[string]any {
	props := map[string]any{}
	var required []any
	for _, k := range sortedKeys(fields) {
		p := fieldPath(path, k)
		switch v := fields[k].(type) {
		case map[string]any:
			props[k] = compactSchema(ps, p, v)
		case string:
			s, req := compactField(ps, p, v)
			props[k] = s
			if req {
				required = append(required, k)
			}
		default:
			ps.add(p, "a field is a string such as \"string | required\" or a map of fields")
		}
	}
	out := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		out["required"] = required
	}
	return out
}

func compactField(ps *problems, path, spec string) (map[string]any, bool) {
	parts := strings.Split(spec, "|")
	s := compactType(ps, path, strings.TrimSpace(parts[0]))
	req := false
	for _, m := range parts[1:] {
		m = strings.TrimSpace(m)
		key, val, hasVal := strings.Cut(m, "=")
		key = strings.TrimSpace(key)
		val = strings.TrimSpace(val)
		switch {
		case key == "required" && (!hasVal || val == "true"):
			req = true
		case key == "default" || key == "minimum" || key == "maximum":
			var v any
			dec := json.NewDecoder(strings.NewReader(val))
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				ps.add(path, "%s=%s is not JSON: %v", key, val, err)
				continue
			}
			s[key] = v
		case key == "enum":
			var vs []any
			for _, e := range strings.Split(val, ",") {
				vs = append(vs, strings.TrimSpace(e))
			}
			s["enum"] = vs
		case key == "description":
			s["description"] = val
		default:
			ps.add(path, "unknown marker %q: use required, default=, minimum=, maximum=, enum= or description=", m)
		}
	}
	return s, req
}

func compactType(ps *problems, path, t string) map[string]any {
	switch {
	case t == "string" || t == "integer" || t == "number" || t == "boolean" || t == "object":
		return map[string]any{"type": t}
	case strings.HasPrefix(t, "[]"):
		return map[string]any{"type": "array", "items": compactType(ps, path, t[2:])}
	case strings.HasPrefix(t, "map[string]"):
		return map[string]any{"type": "object", "additionalProperties": compactType(ps, path, t[len("map[string]"):])}
	}
	ps.add(path, "unknown type %q: use string, integer, number, boolean, object, []T or map[string]T", t)
	return map[string]any{}
}

// unknownSizes leaves every input's size unknown, for the least an
// expression can cost.
type unknownSizes struct{}

// EstimateSize implements celchecker.CostEstimator.
func (unknownSizes) EstimateSize(celchecker.AstNode) *celchecker.SizeEstimate { return nil }

// EstimateCallCost implements celchecker.CostEstimator.
func (unknownSizes) EstimateCallCost(string, string, *celchecker.AstNode, []celchecker.AstNode) *celchecker.CallEstimate {
	return nil
}
