package catalog

import (
	"fmt"
	"strings"

	"github.com/convergehq/converge/server/internal/compat"
)

// stable checks C6 against the base catalog: every version the base has is
// still there, and compat.CheckManifest finds no breaking change between
// the two (derived manifests for graph-defined kinds).
func (ch *checker) stable(base *checker) {
	for _, bk := range base.c.Kinds() {
		if base.byName[bk.Name] != bk {
			continue // a second claim in the base: C9 was its problem
		}
		for _, bv := range bk.Versions {
			hk, hv := ch.version(bk.Name, bv.N)
			if hv == nil {
				where := bv.File
				if hk != nil {
					where = hk.Dir
				}
				ch.add(Problem{File: where, Rule: RuleStable, Message: fmt.Sprintf(
					"v%d of %s was removed but the base has it: versions are never removed (retire one with policy.retired instead)", bv.N, bk.Name)})
				continue
			}
			ch.compare(hk, base.resolve(bk.Name, bv.N), ch.resolve(bk.Name, bv.N), bv.N)
		}
	}
}

// compare reports the breaking changes from a base version to its head.
func (ch *checker) compare(k *Kind, old, cur *resolved, n int) {
	if old == nil || cur == nil || old.manifest == nil || cur.manifest == nil {
		return // a version that cannot be compiled has its own problems
	}
	changes, err := compat.CheckManifest(old.manifest, cur.manifest)
	if err != nil {
		ch.at(cur.doc, "", RuleStable, "cannot compare v%d with the base: %v", n, err)
		return
	}
	next := k.Versions[len(k.Versions)-1].N + 1
	graph := cur.doc.Manifest() == nil
	for _, c := range changes {
		what := string(c.Reason) + ": " + c.Detail
		if strings.HasSuffix(c.Field, "_schema") {
			where := c.Path
			if where == "" {
				where = "/"
			}
			what = "at " + where + ": " + what
		}
		line := cur.doc.LineOf(c.Field + c.Schema)
		if graph {
			line = graphLine(cur.doc, c)
		}
		ch.add(Problem{File: cur.doc.File, Line: line, Path: c.Field, Rule: RuleStable, Message: fmt.Sprintf(
			"breaking change from the base: %s; a breaking change needs a new version (v%d)", what, next)})
	}
}

// graphLine finds a change to a derived manifest in its graph: in the
// graph's spec_schema or status_schema when it has one, else in its
// compact spec_fields or its status projection.
func graphLine(d *Doc, c compat.Change) int {
	if d.LineOf("spec."+c.Field) != d.LineOf("spec") {
		return d.LineOf("spec." + c.Field + c.Schema)
	}
	switch c.Field {
	case "spec_schema":
		return d.LineOf("spec.spec_fields" + strings.ReplaceAll(c.Path, "/*", ""))
	case "status_schema":
		return d.LineOf("spec.status" + strings.ReplaceAll(c.Path, "/*", ""))
	}
	return d.LineOf("spec")
}
