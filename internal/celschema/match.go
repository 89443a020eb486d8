package celschema

import (
	"fmt"
	"slices"
	"strings"

	"cel.dev/cel-go/common/types"
)

// Mismatch says why a value of CEL type t cannot go where schema s
// applies, or "" when it can (or cannot be known before it runs).
func Mismatch(t *types.Type, s any) string {
	m, ok := s.(map[string]any)
	if !ok {
		return ""
	}
	allowed := Types(m)
	if len(allowed) == 0 {
		return ""
	}
	var got []string
	switch t.Kind() {
	case types.DynKind, types.AnyKind, types.ErrorKind, types.UnknownKind, types.TypeParamKind:
		return ""
	case types.StringKind, types.TimestampKind, types.DurationKind:
		got = []string{"string"}
	case types.IntKind, types.UintKind:
		got = []string{"integer", "number"}
	case types.DoubleKind:
		got = []string{"number"}
	case types.BoolKind:
		got = []string{"boolean"}
	case types.NullTypeKind:
		got = []string{"null"}
	case types.ListKind:
		got = []string{"array"}
	case types.MapKind, types.StructKind:
		got = []string{"object"}
	case types.OpaqueKind:
		if t.TypeName() == "optional_type" && len(t.Parameters()) == 1 {
			return Mismatch(t.Parameters()[0], s)
		}
		got = []string{t.String()}
	default:
		got = []string{t.String()}
	}
	for _, g := range got {
		if slices.Contains(allowed, g) {
			if g == "array" && len(t.Parameters()) == 1 {
				if why := Mismatch(t.Parameters()[0], m["items"]); why != "" {
					return "its items: " + why
				}
			}
			return ""
		}
	}
	return fmt.Sprintf("the expression is %s, but the schema wants %s", TypeName(t), strings.Join(allowed, " or "))
}

// TypeName names CEL type t in messages.
func TypeName(t *types.Type) string {
	if t.Kind() == types.StructKind {
		return "an object"
	}
	return t.String()
}

// Fields returns an object schema's declared properties, whether other
// keys are refused (properties are declared and additionalProperties does
// not open the object), and the schema other keys get.
func Fields(sm map[string]any) (props map[string]any, closed bool, extra any) {
	if sm == nil {
		return nil, false, nil
	}
	props, _ = sm["properties"].(map[string]any)
	_, patterns := sm["patternProperties"]
	switch add := sm["additionalProperties"].(type) {
	case map[string]any:
		return props, false, add
	case bool:
		return props, !add && !patterns, nil
	}
	return props, len(props) > 0 && !patterns, nil
}

// Required lists the properties an object schema requires.
func Required(sm map[string]any) []string {
	var out []string
	if sm == nil {
		return nil
	}
	if rs, ok := sm["required"].([]any); ok {
		for _, r := range rs {
			if s, ok := r.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}
