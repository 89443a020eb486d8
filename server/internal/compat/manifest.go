package compat

import (
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/types/known/structpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/schema"
)

// CheckManifest compares two versions of one kind manifest (normally the
// same kind and kind_version, stored and re-applied) and returns every
// breaking change, sorted by Field, Path and Reason.
//
// It checks spec_schema, status_schema and config_schema, and the
// input_schema of every operation both versions declare, with Field set
// to "spec_schema", "status_schema", "config_schema" or
// "operations[VERB].input_schema". Status is validated like specs are, so
// a stricter status schema breaks workers that report what they used to:
// every schema is compared in the same direction. An absent schema
// accepts anything; the instance is always an object (specs, statuses,
// configs and inputs are JSON objects), so "type": "object" is never a
// change.
//
// It also reports, as Removed, every reaction (Field "reactions[NAME]")
// and operation ("operations[VERB]") the new manifest no longer has, and,
// as ReactionChanged, a reaction whose trigger or verb changed or that no
// longer emits something it emitted. Policy, description, owner, workers
// and finalizer are not compared.
//
// The error is non-nil when a manifest is nil or one of its schemas is
// not a schema Check can read; it names the manifest and the field.
func CheckManifest(old, new *convergev1.KindManifest) ([]Change, error) {
	if old == nil || new == nil {
		return nil, errors.New("compat: both manifests are needed, got a nil one")
	}
	var out []Change
	schemas := []struct {
		field    string
		old, new *structpb.Struct
	}{
		{"spec_schema", old.GetSpecSchema(), new.GetSpecSchema()},
		{"status_schema", old.GetStatusSchema(), new.GetStatusSchema()},
		{"config_schema", old.GetConfigSchema(), new.GetConfigSchema()},
	}
	newOps := map[string]*convergev1.OperationDecl{}
	for _, op := range new.GetOperations() {
		if _, dup := newOps[op.GetVerb()]; !dup {
			newOps[op.GetVerb()] = op
		}
	}
	seen := map[string]bool{}
	for _, op := range old.GetOperations() {
		verb := op.GetVerb()
		if seen[verb] {
			continue
		}
		seen[verb] = true
		field := fmt.Sprintf("operations[%s]", verb)
		nop, ok := newOps[verb]
		if !ok {
			out = append(out, Change{Field: field, Reason: Removed, Detail: fmt.Sprintf("operation %s was removed", quote(verb))})
			continue
		}
		schemas = append(schemas, struct {
			field    string
			old, new *structpb.Struct
		}{field + ".input_schema", op.GetInputSchema(), nop.GetInputSchema()})
	}
	for _, s := range schemas {
		cs, err := checkStructs(s.field, s.old, s.new)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	out = append(out, reactionChanges(old.GetReactions(), new.GetReactions())...)
	return sortChanges(out), nil
}

// checkStructs compares two schemas of one manifest field; nil accepts
// every object.
func checkStructs(field string, old, new *structpb.Struct) ([]Change, error) {
	doc := func(s *structpb.Struct) any {
		if s == nil {
			return true
		}
		return s.AsMap()
	}
	cs, err := check(doc(old), doc(new), options{rootTypes: tObject})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	cs = append(cs, secrecyChanges(doc(old), doc(new))...)
	for i := range cs {
		cs[i].Field = field
	}
	return cs, nil
}

// reactionChanges reports reactions removed or changed in a way that
// breaks the workers serving them.
func reactionChanges(old, new []*convergev1.Reaction) []Change {
	byName := map[string]*convergev1.Reaction{}
	for _, r := range new {
		if _, dup := byName[r.GetName()]; !dup {
			byName[r.GetName()] = r
		}
	}
	var out []Change
	seen := map[string]bool{}
	for _, r := range old {
		name := r.GetName()
		if seen[name] {
			continue
		}
		seen[name] = true
		field := fmt.Sprintf("reactions[%s]", name)
		nr, ok := byName[name]
		switch {
		case !ok:
			out = append(out, Change{Field: field, Reason: Removed, Detail: fmt.Sprintf("reaction %s was removed", quote(name))})
			continue
		case nr.GetTrigger() != r.GetTrigger():
			out = append(out, Change{Field: field, Reason: ReactionChanged,
				Detail: fmt.Sprintf("trigger was %s, now %s", quote(r.GetTrigger()), quote(nr.GetTrigger()))})
		case nr.GetVerb() != r.GetVerb():
			out = append(out, Change{Field: field, Reason: ReactionChanged,
				Detail: fmt.Sprintf("verb was %s, now %s", quote(r.GetVerb()), quote(nr.GetVerb()))})
		}
		var lost []string
		for _, e := range r.GetEmits() {
			if !slices.Contains(nr.GetEmits(), e) && !slices.Contains(lost, e) {
				lost = append(lost, e)
			}
		}
		if len(lost) > 0 {
			out = append(out, Change{Field: field, Reason: ReactionChanged,
				Detail: fmt.Sprintf("no longer emits %s", quoteAll(lost))})
		}
	}
	return out
}

func quoteAll(ss []string) string {
	vs := make([]any, len(ss))
	for i, s := range ss {
		vs[i] = s
	}
	return renderList(vs)
}

// secrecyChanges reports each secret path one schema has and the other
// lacks. Schemas that do not compile have none here; the manifest rules
// refuse them.
func secrecyChanges(old, new any) []Change {
	paths := func(doc any) map[string]bool {
		out := map[string]bool{}
		if sch, err := schema.Compile("", doc); err == nil {
			for _, p := range sch.Secrets() {
				out[p.String()] = true
			}
		}
		return out
	}
	was, now := paths(old), paths(new)
	var out []Change
	for p := range now {
		if !was[p] {
			out = append(out, Change{Path: p, Reason: SecrecyChanged, Detail: "the property became secret; secrecy changes only in a new kind_version"})
		}
	}
	for p := range was {
		if !now[p] {
			out = append(out, Change{Path: p, Reason: SecrecyChanged, Detail: "the property is no longer secret; secrecy changes only in a new kind_version"})
		}
	}
	return out
}
