package schema

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// finding is one violation while the library's error tree is flattened.
// wantTypes is set when the finding is a type mismatch, so alternatives
// that merely expected another type can be recognised and merged.
type finding struct {
	path      []string
	message   string
	wantTypes []string
	gotType   string
}

// violations flattens the library's error tree for instance into
// violations sorted by path and message, without duplicates. prefix is
// prepended to every path.
func violations(e *jsonschema.ValidationError, instance any, prefix string) []Violation {
	var fs []finding
	fl := flattener{instance: instance}
	fl.collect(e, &fs)
	out := make([]Violation, 0, len(fs))
	for _, f := range fs {
		out = append(out, Violation{Path: prefix + JoinPointer("", f.path...), Message: f.message})
	}
	return sortViolations(out)
}

func sortViolations(vs []Violation) []Violation {
	slices.SortStableFunc(vs, func(a, b Violation) int {
		if c := ComparePointers(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.Compact(vs)
}

// flattener walks the library's error tree for one instance.
type flattener struct {
	instance any
}

func (fl flattener) collect(e *jsonschema.ValidationError, out *[]finding) {
	at := func(msg string) { *out = append(*out, finding{path: e.InstanceLocation, message: msg}) }
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.AllOf, *kind.Reference:
		// Conjunctions: every cause is a violation in its own right.
		if len(e.Causes) == 0 {
			at("does not match the schema")
		}
		for _, c := range e.Causes {
			fl.collect(c, out)
		}
	case *kind.AnyOf:
		*out = append(*out, fl.alternatives(e, "anyOf")...)
	case *kind.OneOf:
		if len(k.Subschemas) == 2 {
			at(fmt.Sprintf("must match exactly one oneOf alternative, but matches #%d and #%d", k.Subschemas[0], k.Subschemas[1]))
			return
		}
		*out = append(*out, fl.alternatives(e, "oneOf")...)
	case *kind.Type:
		*out = append(*out, finding{
			path:      e.InstanceLocation,
			message:   fmt.Sprintf("must be %s, got %s", strings.Join(k.Want, " or "), k.Got),
			wantTypes: k.Want,
			gotType:   k.Got,
		})
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			*out = append(*out, finding{path: child(e.InstanceLocation, p), message: "property is not allowed"})
		}
	case *kind.PropertyNames:
		msg := fmt.Sprintf("property name %q is not allowed", k.Property)
		var causes []finding
		for _, c := range e.Causes {
			fl.collect(c, &causes)
		}
		if causes = sortFindings(causes); len(causes) > 0 {
			msg += ": " + causes[0].message
		}
		*out = append(*out, finding{path: propertyNamesPath(fl.instance, e.InstanceLocation, k.Property), message: msg})
	default:
		at(describe(e.ErrorKind))
	}
}

// alternatives reports a failed anyOf/oneOf. Alternatives that failed only
// because the value has another type are left out when some alternative
// came closer, so `type: "strin"` reads as an enum problem, not as "or it
// could have been an array".
func (fl flattener) alternatives(e *jsonschema.ValidationError, keyword string) []finding {
	if len(e.Causes) == 0 {
		return []finding{{path: e.InstanceLocation, message: "matches none of the " + keyword + " alternatives"}}
	}
	here := JoinPointer("", e.InstanceLocation...)
	branches := make([][]finding, len(e.Causes))
	var kept []int
	var types []string
	for i, c := range e.Causes {
		fl.collect(c, &branches[i])
		if t, ok := onlyTypeMismatch(branches[i], here); ok {
			types = append(types, t...)
			continue
		}
		kept = append(kept, i)
	}
	switch len(kept) {
	case 0:
		slices.Sort(types)
		types = slices.Compact(types)
		got := branches[0][0].gotType // every branch holds exactly one type finding
		return []finding{{
			path:      e.InstanceLocation,
			message:   fmt.Sprintf("must be %s, got %s", strings.Join(types, " or "), got),
			wantTypes: types,
			gotType:   got,
		}}
	case 1:
		return branches[kept[0]]
	}
	parts := make([]string, 0, len(kept))
	for _, i := range kept {
		b := sortFindings(branches[i])
		part := "#" + strconv.Itoa(i) + ": "
		if p := JoinPointer("", b[0].path...); p != here {
			part += DisplayPointer(p) + " "
		}
		part += b[0].message
		if len(b) > 1 {
			part += fmt.Sprintf(" (and %d more)", len(b)-1)
		}
		parts = append(parts, part)
	}
	return []finding{{path: e.InstanceLocation, message: fmt.Sprintf("matches none of the %s alternatives: %s", keyword, strings.Join(parts, "; "))}}
}

// sortFindings orders findings by path, then message, dropping duplicates.
func sortFindings(fs []finding) []finding {
	slices.SortFunc(fs, func(x, y finding) int {
		if c := ComparePointers(JoinPointer("", x.path...), JoinPointer("", y.path...)); c != 0 {
			return c
		}
		return strings.Compare(x.message, y.message)
	})
	return slices.CompactFunc(fs, func(x, y finding) bool {
		return slices.Equal(x.path, y.path) && x.message == y.message
	})
}

// onlyTypeMismatch reports whether a branch failed solely because the value
// at ptr is not of the type(s) the branch wants, and which types those are.
func onlyTypeMismatch(branch []finding, ptr string) ([]string, bool) {
	if len(branch) != 1 || branch[0].wantTypes == nil || JoinPointer("", branch[0].path...) != ptr {
		return nil, false
	}
	return branch[0].wantTypes, true
}
