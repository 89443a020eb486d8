package compat

import (
	"encoding/json"
	"fmt"
	"math/big"
	"math/bits"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/convergehq/converge/server/internal/schema"
)

// typeSet is a set of JSON types, with numbers split into integers and
// the rest so that "integer" and "number" compare exactly.
type typeSet uint8

const (
	tNull typeSet = 1 << iota
	tBool
	tObject
	tArray
	tString
	tInt
	tFrac

	tNumber = tInt | tFrac
	tAll    = tNull | tBool | tObject | tArray | tString | tNumber
)

func typeByName(name string) typeSet {
	switch name {
	case "null":
		return tNull
	case "boolean":
		return tBool
	case "object":
		return tObject
	case "array":
		return tArray
	case "string":
		return tString
	case "integer":
		return tInt
	case "number":
		return tNumber
	}
	return 0
}

// typesOf reads a "type" keyword. Unknown names are ignored, as the
// validator ignores them; no name at all means every type.
func typesOf(kw any) typeSet {
	var t typeSet
	switch x := kw.(type) {
	case string:
		t = typeByName(x)
	case []any:
		for _, item := range x {
			if s, ok := item.(string); ok {
				t |= typeByName(s)
			}
		}
	}
	if t == 0 {
		return tAll
	}
	return t
}

// typeOfValue is the type of a JSON value.
func typeOfValue(v any) typeSet {
	switch v.(type) {
	case nil:
		return tNull
	case bool:
		return tBool
	case string:
		return tString
	case []any:
		return tArray
	case map[string]any:
		return tObject
	}
	if r, ok := toRat(v); ok {
		if r.IsInt() {
			return tInt
		}
		return tFrac
	}
	return 0
}

// names lists the set's types as JSON Schema names, sorted.
func (t typeSet) names() []string {
	var out []string
	add := func(bit typeSet, name string) {
		if t&bit != 0 {
			out = append(out, name)
		}
	}
	add(tArray, "array")
	add(tBool, "boolean")
	if t&tNumber == tInt {
		out = append(out, "integer")
	}
	add(tNull, "null")
	if t&tFrac != 0 {
		out = append(out, "number")
	}
	add(tObject, "object")
	add(tString, "string")
	return out
}

// String renders the set as a "type" keyword would be written: "string",
// ["null","string"], or "any" for every type.
func (t typeSet) String() string {
	if t == tAll {
		return "any"
	}
	n := t.names()
	if len(n) == 1 {
		return `"` + n[0] + `"`
	}
	return `["` + strings.Join(n, `","`) + `"]`
}

// count is the number of types in the set, numbers counting twice.
func (t typeSet) count() int { return bits.OnesCount8(uint8(t)) }

// toRat reads a JSON number as the validator does: exactly, from its
// shortest decimal form.
func toRat(v any) (*big.Rat, bool) {
	switch v.(type) {
	case json.Number, float32, float64, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return new(big.Rat).SetString(fmt.Sprint(v))
	}
	return nil, false
}

// containsValue reports whether vs holds a value equal to v.
//
// Here and wherever this package compares values it uses
// schema.EqualJSON. Check has compiled both documents first, so every
// number in them is a JSON number within schema's limits, where
// EqualJSON gives the validator's answer (exact decimal value).
func containsValue(vs []any, v any) bool {
	for _, x := range vs {
		if schema.EqualJSON(x, v) {
			return true
		}
	}
	return false
}

// maxRendered caps how much of a value a Detail quotes.
const maxRendered = 120

// render writes a value as compact JSON for a Detail, shortened past
// maxRendered characters.
func render(v any) string {
	if r, ok := toRat(v); ok {
		return ratString(r)
	}
	s, err := marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return shorten(s)
}

// marshal encodes compact JSON without escaping <, > and &, which people
// read in patterns and values.
func marshal(v any) (string, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func renderAll(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = render(v)
	}
	return shorten("[" + strings.Join(parts, ",") + "]")
}

func shorten(s string) string {
	if len(s) <= maxRendered {
		return s
	}
	cut := maxRendered
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return fmt.Sprint(f)
}

func quote(s string) string {
	q, _ := marshal(s)
	return q
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
