package compat

import (
	"regexp"
	"strconv"

	"github.com/convergehq/converge/server/internal/schema"
)

// evalArray evaluates a keyword that applies to arrays.
func (e *evaluator) evalArray(n node, kw string, arr []any, depth int) verdict {
	m := n.m()
	switch kw {
	case "minItems", "maxItems":
		want, ok := intArg(m[kw])
		if !ok {
			return pass
		}
		if kw == "minItems" {
			return verdictOf(len(arr) >= want)
		}
		return verdictOf(len(arr) <= want)
	case "uniqueItems":
		if b, _ := m[kw].(bool); !b {
			return pass
		}
		for i := range arr {
			for j := i + 1; j < len(arr); j++ {
				if schema.EqualJSON(arr[i], arr[j]) {
					return fail
				}
			}
		}
		return pass
	case "prefixItems":
		r := pass
		for i := 0; i < len(arr) && i < prefixLen(n); i++ {
			c, ok := n.child("prefixItems", strconv.Itoa(i))
			if !ok {
				return unknown
			}
			if r = r.and(e.descend(c, arr[i], depth+1)); r == fail {
				return fail
			}
		}
		return r
	case "items":
		c, ok := n.child("items")
		if !ok {
			return unknown
		}
		r := pass
		for i := prefixLen(n); i < len(arr); i++ {
			if r = r.and(e.descend(c, arr[i], depth+1)); r == fail {
				return fail
			}
		}
		return r
	case "contains":
		c, ok := n.child("contains")
		if !ok {
			return unknown
		}
		matched, unknowns := 0, 0
		for _, item := range arr {
			switch e.descend(c, item, depth+1) {
			case pass:
				matched++
			case unknown:
				unknowns++
			}
		}
		lo, hasLo := intArg(m["minContains"])
		if !hasLo {
			lo = 1
		}
		hi, hasHi := intArg(m["maxContains"])
		if matched+unknowns < lo || (hasHi && matched > hi) {
			return fail
		}
		if unknowns > 0 && (matched < lo || (hasHi && matched+unknowns > hi)) {
			return unknown
		}
		return pass
	case "unevaluatedItems":
		if c, ok := n.child(kw); ok && c.trivial() {
			return pass
		}
		return unknown
	}
	return pass
}

// evalObject evaluates a keyword that applies to objects.
func (e *evaluator) evalObject(n node, kw string, obj map[string]any, depth int) verdict {
	m := n.m()
	switch kw {
	case "minProperties", "maxProperties":
		want, ok := intArg(m[kw])
		if !ok {
			return pass
		}
		if kw == "minProperties" {
			return verdictOf(len(obj) >= want)
		}
		return verdictOf(len(obj) <= want)
	case "required":
		for _, name := range stringList(m[kw]) {
			if _, ok := obj[name]; !ok {
				return fail
			}
		}
		return pass
	case "dependentRequired", "dependencies", "dependentSchemas":
		return e.evalDependencies(n, kw, obj, depth)
	case "properties":
		r := pass
		for name, val := range obj {
			c, ok := n.child("properties", name)
			if !ok {
				continue
			}
			if r = r.and(e.descend(c, val, depth+1)); r == fail {
				return fail
			}
		}
		return r
	case "patternProperties", "additionalProperties":
		return e.evalPatterns(n, kw, obj, depth)
	case "propertyNames":
		c, ok := n.child(kw)
		if !ok {
			return unknown
		}
		r := pass
		for name := range obj {
			if r = r.and(e.descend(c, name, depth+1)); r == fail {
				return fail
			}
		}
		return r
	case "unevaluatedProperties":
		if c, ok := n.child(kw); ok && c.trivial() {
			return pass
		}
		return unknown
	}
	return pass
}

// evalDependencies evaluates dependentRequired, dependentSchemas or
// dependencies.
func (e *evaluator) evalDependencies(n node, kw string, obj map[string]any, depth int) verdict {
	deps, _ := n.m()[kw].(map[string]any)
	r := pass
	for name, dep := range deps {
		if _, present := obj[name]; !present {
			continue
		}
		if list, ok := dep.([]any); ok {
			if kw == "dependentSchemas" {
				return unknown
			}
			for _, req := range list {
				s, _ := req.(string)
				if _, ok := obj[s]; !ok {
					return fail
				}
			}
			continue
		}
		if kw == "dependentRequired" {
			continue
		}
		c, ok := n.child(kw, name)
		if !ok {
			return unknown
		}
		if r = r.and(e.eval(c, obj, depth+1)); r == fail {
			return fail
		}
	}
	return r
}

// evalPatterns evaluates "patternProperties" or "additionalProperties",
// which both depend on which names the patterns match.
func (e *evaluator) evalPatterns(n node, kw string, obj map[string]any, depth int) verdict {
	m := n.m()
	pats, _ := m["patternProperties"].(map[string]any)
	props, _ := m["properties"].(map[string]any)
	r := pass
	for name, val := range obj {
		matched := false
		for p := range pats {
			re, ok := compilePattern(p)
			if !ok {
				return unknown
			}
			if !re.MatchString(name) {
				continue
			}
			matched = true
			if kw != "patternProperties" {
				break
			}
			c, ok := n.child("patternProperties", p)
			if !ok {
				return unknown
			}
			if r = r.and(e.descend(c, val, depth+1)); r == fail {
				return fail
			}
		}
		if kw != "additionalProperties" || matched {
			continue
		}
		if _, declared := props[name]; declared {
			continue
		}
		c, ok := n.child(kw)
		if !ok {
			return unknown
		}
		if r = r.and(e.descend(c, val, depth+1)); r == fail {
			return fail
		}
	}
	return r
}

// intArg reads a non-negative integer keyword argument ("minLength": 2 or
// 2.0); like the validator, it ignores anything else.
func intArg(v any) (int, bool) {
	r, ok := toRat(v)
	if !ok || !r.IsInt() || r.Sign() < 0 || !r.Num().IsInt64() {
		return 0, false
	}
	n := r.Num().Int64()
	if n > 1<<31 {
		n = 1 << 31
	}
	return int(n), true
}

func stringList(v any) []string {
	arr, _ := v.([]any)
	out := make([]string, 0, len(arr))
	for _, x := range arr {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// compilePattern compiles a "pattern" or "patternProperties" regex the
// way the validator does (Go's RE2 syntax).
func compilePattern(v any) (*regexp.Regexp, bool) {
	s, ok := v.(string)
	if !ok {
		return nil, false
	}
	re, err := regexp.Compile(s)
	return re, err == nil
}

// assertedFormats are the formats the validator checks (every other
// format is an annotation).
var assertedFormats = map[string]bool{
	"regex": true, "json-pointer": true, "relative-json-pointer": true, "uuid": true, "duration": true,
	"period": true, "ipv4": true, "ipv6": true, "hostname": true, "email": true, "date": true, "time": true,
	"date-time": true, "uri": true, "iri": true, "uri-reference": true, "iri-reference": true,
	"uri-template": true, "semver": true,
}

func assertedFormat(f string) bool { return assertedFormats[f] }
