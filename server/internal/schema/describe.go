package schema

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// printer renders error kinds this package has no wording of its own for.
var printer = message.NewPrinter(language.English)

// describe renders one leaf error kind in plain words.
func describe(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Enum:
		if len(k.Want) == 1 {
			return "must be " + jsonValue(k.Want[0])
		}
		return "must be one of " + jsonValues(k.Want)
	case *kind.Const:
		return "must be " + jsonValue(k.Want)
	case *kind.Format:
		return fmt.Sprintf("must be a valid %s: %v", k.Want, k.Err)
	case *kind.Required:
		return "missing required " + plural(len(k.Missing), "property", "properties") + " " + quoted(k.Missing)
	case *kind.DependentRequired:
		return fmt.Sprintf("property %q requires %s %s", k.Prop, plural(len(k.Missing), "property", "properties"), quoted(k.Missing))
	case *kind.Dependency:
		return fmt.Sprintf("property %q requires %s %s", k.Prop, plural(len(k.Missing), "property", "properties"), quoted(k.Missing))
	case *kind.FalseSchema:
		return "is not allowed"
	case *kind.Not:
		return `must not match the "not" schema`
	case *kind.MinProperties:
		return fmt.Sprintf("must have at least %d %s, got %d", k.Want, plural(k.Want, "property", "properties"), k.Got)
	case *kind.MaxProperties:
		return fmt.Sprintf("must have at most %d %s, got %d", k.Want, plural(k.Want, "property", "properties"), k.Got)
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d %s, got %d", k.Want, plural(k.Want, "item", "items"), k.Got)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d %s, got %d", k.Want, plural(k.Want, "item", "items"), k.Got)
	case *kind.AdditionalItems:
		return fmt.Sprintf("has %d more %s than allowed", k.Count, plural(k.Count, "item", "items"))
	case *kind.UniqueItems:
		return fmt.Sprintf("items must be unique, but #%d and #%d are equal", k.Duplicates[0], k.Duplicates[1])
	case *kind.Contains:
		return "must contain at least one matching item"
	case *kind.MinContains:
		return fmt.Sprintf("must contain at least %d matching %s, got %d", k.Want, plural(k.Want, "item", "items"), len(k.Got))
	case *kind.MaxContains:
		return fmt.Sprintf("must contain at most %d matching %s, got %d", k.Want, plural(k.Want, "item", "items"), len(k.Got))
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d %s long, got %d", k.Want, plural(k.Want, "character", "characters"), k.Got)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d %s long, got %d", k.Want, plural(k.Want, "character", "characters"), k.Got)
	case *kind.Pattern:
		return `must match pattern "` + k.Want + `"`
	case *kind.Minimum:
		return "must be >= " + ratString(k.Want)
	case *kind.Maximum:
		return "must be <= " + ratString(k.Want)
	case *kind.ExclusiveMinimum:
		return "must be > " + ratString(k.Want)
	case *kind.ExclusiveMaximum:
		return "must be < " + ratString(k.Want)
	case *kind.MultipleOf:
		return "must be a multiple of " + ratString(k.Want)
	case *kind.InvalidJsonValue:
		return fmt.Sprintf("%T is not a JSON value", k.Value)
	case *kind.RefCycle:
		return "the schema's references form a cycle"
	default:
		return k.LocalizedString(printer)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func quoted(names []string) string {
	names = slices.Clone(names)
	slices.Sort(names)
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// maxShownValue caps how much of a schema's enum or const a message quotes.
const maxShownValue = 200

func jsonValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "the allowed value"
	}
	return truncate(string(b))
}

func jsonValues(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = jsonValue(v)
	}
	return truncate(strings.Join(parts, ", "))
}

func truncate(s string) string {
	if len(s) <= maxShownValue {
		return s
	}
	cut := maxShownValue
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}
