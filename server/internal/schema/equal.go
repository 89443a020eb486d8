package schema

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// EqualJSON reports whether two decoded JSON values are equal as JSON, the
// equality "const", "enum" and "uniqueItems" use: objects regardless of
// key order, arrays item by item, and numbers by exact decimal value
// whatever their Go type, so 1, 1.0, json.Number("1e0") and float64(1)
// are all equal. A float32 counts as the float64 it converts to, as
// Compile and Validate read it.
//
// What a document within this package's limits never holds still gets an
// answer rather than an error, at bounded cost: a number text that is
// not a JSON number, or whose exponent has more than 18 digits, equals
// only the same text; NaN and infinities equal only themselves; values of
// other Go types compare with reflect.DeepEqual.
func EqualJSON(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !EqualJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !EqualJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	ta, okA := numberText(a)
	tb, okB := numberText(b)
	if okA && okB {
		return equalNumbers(ta, tb)
	}
	return reflect.DeepEqual(a, b)
}

// numberText renders a Go number as JSON number text; non-finite floats
// come out as "NaN", "+Inf" or "-Inf", which only equal themselves. ok is
// false for anything that is not a number.
func numberText(v any) (text string, ok bool) {
	switch x := v.(type) {
	case json.Number:
		return string(x), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 64), true
	case int:
		return strconv.FormatInt(int64(x), 10), true
	case int8:
		return strconv.FormatInt(int64(x), 10), true
	case int16:
		return strconv.FormatInt(int64(x), 10), true
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case uint:
		return strconv.FormatUint(uint64(x), 10), true
	case uint8:
		return strconv.FormatUint(uint64(x), 10), true
	case uint16:
		return strconv.FormatUint(uint64(x), 10), true
	case uint32:
		return strconv.FormatUint(uint64(x), 10), true
	case uint64:
		return strconv.FormatUint(x, 10), true
	}
	return "", false
}

// equalNumbers compares two JSON number texts by exact decimal value.
// Texts that do not parse as numbers are equal only when identical.
func equalNumbers(a, b string) bool {
	if a == b {
		return true
	}
	da, okA := parseDecimal(a)
	db, okB := parseDecimal(b)
	return okA && okB && da == db
}

// decimal is a number as sign × digits × 10^exp with no leading or
// trailing zeros in digits; zero is the zero decimal.
type decimal struct {
	neg    bool
	digits string
	exp    int64
}

// maxExponentDigits keeps exponent arithmetic within int64; numbers with
// longer exponents compare textually.
const maxExponentDigits = 18

func parseDecimal(s string) (decimal, bool) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	intEnd := skipDigits(s, 0)
	intPart, rest := s[:intEnd], s[intEnd:]
	var frac string
	if strings.HasPrefix(rest, ".") {
		n := skipDigits(rest, 1) - 1
		if n == 0 {
			return decimal{}, false
		}
		frac, rest = rest[1:1+n], rest[1+n:]
	}
	if intPart == "" && frac == "" {
		return decimal{}, false
	}
	var exp int64
	if rest != "" {
		if rest[0] != 'e' && rest[0] != 'E' {
			return decimal{}, false
		}
		e := rest[1:]
		if e != "" && (e[0] == '+' || e[0] == '-') {
			e = e[1:]
		}
		if e == "" || skipDigits(e, 0) != len(e) {
			return decimal{}, false
		}
		if trimmed := strings.TrimLeft(e, "0"); len(trimmed) > maxExponentDigits {
			return decimal{}, false
		}
		v, err := strconv.ParseInt(rest[1:], 10, 64)
		if err != nil {
			return decimal{}, false
		}
		exp = v
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return decimal{}, true
	}
	exp -= int64(len(frac))
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	return decimal{neg: neg, digits: trimmed, exp: exp}, true
}
