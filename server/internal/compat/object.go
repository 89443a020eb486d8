package compat

import (
	"fmt"
	"slices"

	"github.com/convergehq/converge/server/internal/schema"
)

// objectKeywords checks the keywords that apply to objects.
func (c *comparer) objectKeywords(cs *oldCase, a node, strict bool) []Change {
	if !cs.has(tObject) {
		return nil
	}
	var out []Change
	out = append(out, c.properties(cs, a, strict)...)
	out = append(out, c.patternProperties(cs, a, strict)...)
	out = append(out, c.additionalProperties(cs, a, strict)...)
	out = append(out, c.propertyNames(cs, a, strict)...)
	out = append(out, c.required(cs, a)...)
	out = append(out, c.dependencies(cs, a, strict)...)
	req := len(requiredNames(cs.atoms))
	out = append(out, c.lengthKeyword(cs, a, "minProperties", true, func() (int, bool) { return req, true })...)
	out = append(out, c.lengthKeyword(cs, a, "maxProperties", false, func() (int, bool) {
		best, found := 0, false
		for _, o := range cs.atoms {
			if closedAtom(o) {
				props, _ := o.m()["properties"].(map[string]any)
				if !found || len(props) < best {
					best, found = len(props), true
				}
			}
		}
		return best, found
	})...)
	return out
}

// properties compares each property the new atom declares with what the
// old case says of it. A name the old case never mentioned is additive
// (see Check), unless the comparison is strict.
func (c *comparer) properties(cs *oldCase, a node, strict bool) []Change {
	props, _ := a.m()["properties"].(map[string]any)
	var out []Change
	for _, name := range sortedKeys(props) {
		target, ok := a.child("properties", name)
		if !ok {
			continue
		}
		nodes, declared, absent := propertyOf(cs.atoms, name)
		if absent || (!declared && !strict) {
			continue
		}
		out = append(out, under(name, c.descend(nodes, target, strict))...)
	}
	return out
}

// patternProperties compares each new pattern's schema with what the old
// case says of the properties whose names match it.
func (c *comparer) patternProperties(cs *oldCase, a node, strict bool) []Change {
	res := newPatterns(a)
	var out []Change
	for _, p := range sortedKeys(res) {
		target, ok := a.child("patternProperties", p)
		if !ok || target.trivial() {
			continue
		}
		re := res[p]
		for _, name := range declaredNames(cs.atoms) {
			if re != nil && !re.MatchString(name) {
				continue
			}
			nodes, _, absent := propertyOf(cs.atoms, name)
			if !absent {
				out = append(out, under(name, c.descend(nodes, target, strict))...)
			}
		}
		alts := familyOf(cs.atoms, func(old string) patternRel {
			if old == p {
				return relAll
			}
			return relMaybe
		})
		for _, alt := range alts {
			if len(alt) == 0 {
				out = append(out, Change{Path: "/*", Schema: target.ptr, Reason: PatternProperties,
					Detail: fmt.Sprintf("patternProperties %s added: properties whose names match it were unconstrained", quote(p))})
				continue
			}
			out = append(out, under("*", c.descend(alt, target, strict))...)
		}
	}
	return out
}

// additionalProperties checks the properties the new atom leaves to
// "additionalProperties": old declared properties it no longer names
// (removed), and every other name.
func (c *comparer) additionalProperties(cs *oldCase, a node, strict bool) []Change {
	var out []Change
	m := a.m()
	addl, kw, ok := additional(a)
	if u, has := a.child("unevaluatedProperties"); has && kw != "unevaluatedProperties" && m["additionalProperties"] == nil &&
		!u.trivial() && !c.hasEqualAtom(cs, a) {
		out = append(out, Change{Schema: u.ptr, Reason: Unproven,
			Detail: "unevaluatedProperties next to in-place applicators ($ref, allOf, anyOf, oneOf, if, dependentSchemas) cannot be compared"})
	}
	if !ok || addl.trivial() {
		return out
	}
	props, _ := m["properties"].(map[string]any)
	res := newPatterns(a)
	for _, name := range declaredNames(cs.atoms) {
		if _, named := props[name]; named || matchesAny(res, name) {
			continue
		}
		nodes, _, absent := propertyOf(cs.atoms, name)
		if absent {
			continue
		}
		fs := c.descend(nodes, addl, strict)
		if len(fs) == 0 {
			continue
		}
		detail := fmt.Sprintf("property %s was removed and %s is false", quote(name), kw)
		if !addl.isFalse() {
			detail = fmt.Sprintf("property %s was removed and now falls under %s, which refuses some of its old values (%s)", quote(name), kw, fs[0].Detail)
		}
		out = append(out, Change{Path: schema.JoinPointer("", name), Schema: addl.ptr, Reason: Removed, Detail: detail})
	}
	alts := familyOf(cs.atoms, func(old string) patternRel {
		if _, same := res[old]; same {
			return relNone
		}
		return relMaybe
	})
	now, _ := marshal(addl.v)
	for _, alt := range alts {
		if len(alt) == 0 {
			out = append(out, Change{Path: "/*", Schema: addl.ptr, Reason: AdditionalProperties,
				Detail: fmt.Sprintf("%s was %s, now %s", kw, c.oldAdditional(cs), shorten(now))})
			continue
		}
		fs := c.descend(alt, addl, strict)
		if len(fs) == 0 {
			continue
		}
		if addl.isFalse() {
			out = append(out, Change{Path: "/*", Schema: addl.ptr, Reason: AdditionalProperties,
				Detail: fmt.Sprintf("%s was %s, now false", kw, c.oldAdditional(cs))})
			continue
		}
		out = append(out, under("*", fs)...)
	}
	return out
}

// oldAdditional describes the old case's additionalProperties for a
// Detail.
func (c *comparer) oldAdditional(cs *oldCase) string {
	for _, o := range cs.atoms {
		if n, _, ok := additional(o); ok {
			s, _ := marshal(n.v)
			return shorten(s)
		}
	}
	return "absent"
}

// propertyNames checks a new "propertyNames" against the names old
// objects may have.
func (c *comparer) propertyNames(cs *oldCase, a node, strict bool) []Change {
	pn, ok := a.child("propertyNames")
	if !ok || pn.trivial() {
		return nil
	}
	var out []Change
	structural := !slices.ContainsFunc(cs.atoms, closedAtom)
	for _, name := range declaredNames(cs.atoms) {
		if _, _, absent := propertyOf(cs.atoms, name); absent {
			continue
		}
		switch eval(pn, name, 0) {
		case fail:
			out = append(out, Change{Path: schema.JoinPointer("", name), Schema: pn.ptr, Reason: PropertyNames,
				Detail: fmt.Sprintf("propertyNames refuses %s, a property the old schema declared", quote(name))})
		case unknown:
			structural = true
		}
	}
	if !structural {
		return out
	}
	names := []node{typeNode(tString)}
	for _, o := range cs.atoms {
		if n, ok := o.child("propertyNames"); ok {
			names = append(names, n)
		}
	}
	fs := c.descend(names, pn, strict)
	if len(fs) == 0 {
		return out
	}
	what := "added"
	if len(names) > 1 {
		what = "narrowed"
	}
	return append(out, Change{Schema: pn.ptr, Reason: PropertyNames, Detail: fmt.Sprintf("propertyNames %s: %s", what, fs[0].Detail)})
}

// required: every newly required name must have been required before.
func (c *comparer) required(cs *oldCase, a node) []Change {
	req := stringList(a.m()["required"])
	if len(req) == 0 {
		return nil
	}
	slices.Sort(req)
	old := requiredNames(cs.atoms)
	var out []Change
	for _, name := range slices.Compact(req) {
		if old[name] || c.valuesHave(cs, "", name) {
			continue
		}
		out = append(out, Change{Path: schema.JoinPointer("", name), Schema: a.at("required"), Reason: NewlyRequired,
			Detail: fmt.Sprintf("%s is now required", quote(name))})
	}
	return out
}

// valuesHave reports whether every finite old value that is an object
// with property when (or any object, for when "") has property name.
func (c *comparer) valuesHave(cs *oldCase, when, name string) bool {
	fails, decided := cs.byValues(func(v any) verdict {
		obj, ok := v.(map[string]any)
		if !ok {
			return pass
		}
		if _, has := obj[when]; when != "" && !has {
			return pass
		}
		_, has := obj[name]
		return verdictOf(has)
	})
	return decided && len(fails) == 0
}

// dependencies checks dependentRequired, dependentSchemas and their
// predecessor "dependencies", which the validator still honours.
func (c *comparer) dependencies(cs *oldCase, a node, strict bool) []Change {
	var out []Change
	oldReq := requiredNames(cs.atoms)
	for _, kw := range []string{"dependentRequired", "dependentSchemas", "dependencies"} {
		deps, _ := a.m()[kw].(map[string]any)
		for _, prop := range sortedKeys(deps) {
			if _, _, absent := propertyOf(cs.atoms, prop); absent || oldLoopsOn(cs, prop) {
				continue
			}
			if list, isList := deps[prop].([]any); isList {
				for _, name := range stringList(list) {
					if oldReq[name] || c.oldDependsOn(cs, prop, name) || c.valuesHave(cs, prop, name) {
						continue
					}
					out = append(out, Change{Path: schema.JoinPointer("", name), Schema: a.at(kw, prop), Reason: NewlyRequired,
						Detail: fmt.Sprintf("%s is now required when %s is present", quote(name), quote(prop))})
				}
				continue
			}
			target, ok := a.child(kw, prop)
			if !ok || target.trivial() {
				continue
			}
			// When prop is present, old values also satisfied the old
			// schema's own dependent schemas for it.
			nodes := cs.nodes()
			for _, o := range cs.atoms {
				for _, okw := range []string{"dependentSchemas", "dependencies"} {
					if d, ok := o.child(okw, prop); ok {
						nodes = append(nodes, d)
					}
				}
			}
			out = append(out, c.sub(nodes, target, strict)...)
		}
	}
	return out
}

// oldDependsOn reports whether the old case requires name whenever prop
// is present.
func (c *comparer) oldDependsOn(cs *oldCase, prop, name string) bool {
	for _, o := range cs.atoms {
		for _, kw := range []string{"dependentRequired", "dependencies"} {
			deps, _ := o.m()[kw].(map[string]any)
			if slices.Contains(stringList(deps[prop]), name) {
				return true
			}
		}
	}
	return false
}

// oldLoopsOn reports whether the old case's dependent schema for prop
// leads back to itself without going deeper into the value: the validator
// then refuses every value that has prop, so there is nothing to keep.
func oldLoopsOn(cs *oldCase, prop string) bool {
	for _, o := range cs.atoms {
		for _, kw := range []string{"dependentSchemas", "dependencies"} {
			d, ok := o.child(kw, prop)
			if !ok {
				continue
			}
			for _, inner := range flatten([]node{d}, false).atoms {
				for _, ikw := range []string{"dependentSchemas", "dependencies"} {
					if again, ok := inner.child(ikw, prop); ok && identity(again) == identity(d) {
						return true
					}
				}
			}
		}
	}
	return false
}
