package conversion

import (
	"fmt"
	"slices"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"

	"github.com/convergehq/converge/internal/celschema"
)

// resultChecker checks what an expression yields against the new
// version's spec_schema: the keys of an object literal one by one (so a
// misspelled field is found at its own position), the fields an old
// object carries over, and every value's type.
type resultChecker struct {
	ts       *celschema.Set
	ast      *cel.Ast
	to       int32
	problems []Problem
}

func (rc *resultChecker) report(id int64, path, format string, args ...any) {
	p := Problem{Message: fmt.Sprintf(format, args...)}
	if path != "" {
		p.Message = path + ": " + p.Message
	}
	if loc := rc.ast.NativeRep().SourceInfo().GetStartLocation(id); loc.Line() > 0 {
		p.Line, p.Column = loc.Line(), loc.Column()+1
	}
	rc.problems = append(rc.problems, p)
}

// check checks node e against schema s at path (a JSON pointer, "" for
// the whole spec).
func (rc *resultChecker) check(e ast.Expr, s any, path string) {
	sm, _ := s.(map[string]any)
	if e.Kind() != ast.MapKind || sm == nil {
		rc.checkType(e.ID(), rc.ast.NativeRep().GetType(e.ID()), sm, path)
		return
	}
	if t := celschema.Type(sm); t != "" && t != "object" {
		rc.report(e.ID(), path, "the value is an object, but the spec_schema of v%d wants %s", rc.to, t)
		return
	}
	props, closed, extra := celschema.Fields(sm)
	seen := map[string]bool{}
	for _, entry := range e.AsMap().Entries() {
		me := entry.AsMapEntry()
		key := me.Key()
		if key.Kind() != ast.LiteralKind {
			continue
		}
		k, ok := key.AsLiteral().Value().(string)
		if !ok {
			rc.report(key.ID(), path, "a spec's keys are strings")
			continue
		}
		seen[k] = true
		fs, declared := props[k]
		switch {
		case declared:
		case closed:
			rc.report(key.ID(), path, "field %q is not in the spec_schema of v%d, which declares %s", k, rc.to, quoted(props))
			continue
		default:
			fs = extra
		}
		if !me.IsOptional() {
			rc.check(me.Value(), fs, path+"/"+k)
		}
	}
	for _, req := range celschema.Required(sm) {
		if !seen[req] {
			rc.report(e.ID(), path, "misses %q, which the spec_schema of v%d requires", req, rc.to)
		}
	}
}

// checkType checks a value of CEL type t, which is not an object literal.
func (rc *resultChecker) checkType(id int64, t *types.Type, sm map[string]any, path string) {
	if sm == nil {
		return
	}
	if why := celschema.Mismatch(t, sm); why != "" {
		rc.report(id, path, "%s (the spec_schema of v%d)", why, rc.to)
		return
	}
	fields := rc.ts.FieldsOf(t)
	if fields == nil {
		return
	}
	// An object of the old schema carried over: each of its fields must
	// fit the new schema too.
	props, closed, extra := celschema.Fields(sm)
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		fs, declared := props[k]
		switch {
		case declared:
		case closed:
			rc.report(id, path, "carries field %q over, which the spec_schema of v%d does not declare (it declares %s)", k, rc.to, quoted(props))
			continue
		default:
			fs = extra
		}
		if fm, ok := fs.(map[string]any); ok {
			rc.checkType(id, fields[k], fm, path+"/"+k)
		}
	}
	for _, req := range celschema.Required(sm) {
		if _, ok := fields[req]; !ok {
			rc.report(id, path, "misses %q, which the spec_schema of v%d requires", req, rc.to)
		}
	}
}

func quoted(props map[string]any) string {
	if len(props) == 0 {
		return "no fields"
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, fmt.Sprintf("%q", k))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
