package catalog

import (
	"errors"
	"fmt"

	"github.com/convergehq/converge/server/internal/conversion"
)

// conversions checks C12: a version's conversion type-checks against the
// spec_schema of the catalog's version it converts from and its own, as
// applying the manifest to a server would check it.
func (ch *checker) conversions(k *Kind) {
	if ch.byName[k.Name] != k {
		return
	}
	for _, v := range k.Versions {
		r := ch.resolve(k.Name, v.N)
		if r == nil || r.manifest == nil || r.manifest.GetConversion() == nil {
			continue
		}
		m := r.manifest
		c := m.GetConversion()
		var convErr *conversion.Error
		if err := conversion.CheckVersions(c.GetFromVersion(), m.GetKindVersion()); err != nil {
			ch.at(r.doc, "conversion.from_version", RuleConvert, "%v", err)
			continue
		}
		from := conversion.FromVersion(c.GetFromVersion(), m.GetKindVersion())
		old := ch.resolve(k.Name, int(from))
		if old == nil || old.manifest == nil {
			ch.at(r.doc, "conversion.from_version", RuleConvert, "converts from v%d, which the catalog does not have", from)
			continue
		}
		_, err := conversion.Compile(from, m.GetKindVersion(), c.GetExpr(), old.manifest.GetSpecSchema().AsMap(), m.GetSpecSchema().AsMap())
		if errors.As(err, &convErr) {
			for _, p := range convErr.Problems {
				path := convErr.Field
				if p.Line > 0 {
					path = fmt.Sprintf("%s:%d:%d", path, p.Line, p.Column)
				}
				ch.add(Problem{File: r.doc.File, Line: r.doc.LineOf(convErr.Field), Path: path, Rule: RuleConvert, Message: p.Message})
			}
		} else if err != nil {
			ch.at(r.doc, "conversion.expr", RuleConvert, "%v", err)
		}
	}
}
