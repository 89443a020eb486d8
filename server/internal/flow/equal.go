package flow

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// jsonEqual reports whether two decoded JSON values are equal as JSON:
// numbers compare by exact decimal value whatever their Go type, so 1,
// 1.0, json.Number("1e0") and float64(1) are all equal.
func jsonEqual(a, b any) bool {
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
			if !ok || !jsonEqual(v, w) {
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
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	if isNumber(a) && isNumber(b) {
		return equalNumbers(numberText(a), numberText(b))
	}
	return reflect.DeepEqual(a, b)
}

func isNumber(v any) bool {
	switch v.(type) {
	case json.Number, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return true
	}
	return false
}

// numberText renders a Go number as JSON number text; non-finite floats
// come out as "NaN", "+Inf" or "-Inf", which only equal themselves.
func numberText(v any) string {
	switch x := v.(type) {
	case json.Number:
		return string(x)
	case float64:
		return floatText(x)
	case float32:
		return floatText(float64(x))
	case int:
		return strconv.FormatInt(int64(x), 10)
	case int8:
		return strconv.FormatInt(int64(x), 10)
	case int16:
		return strconv.FormatInt(int64(x), 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint:
		return strconv.FormatUint(uint64(x), 10)
	case uint8:
		return strconv.FormatUint(uint64(x), 10)
	case uint16:
		return strconv.FormatUint(uint64(x), 10)
	case uint32:
		return strconv.FormatUint(uint64(x), 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	}
	return ""
}

// floatText is the shortest decimal that reads back as f.
func floatText(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
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
	intEnd := digitRun(s)
	intPart, rest := s[:intEnd], s[intEnd:]
	var frac string
	if strings.HasPrefix(rest, ".") {
		n := digitRun(rest[1:])
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
		if digitRun(e) != len(e) || e == "" {
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

func digitRun(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}
