package authz

import (
	"slices"
	"sort"
)

// Scope is what a caller may read of namespaced data: resources and
// everything that belongs to one (events, changes, history, task records,
// operations). It is the one statement of the namespace-visibility rule;
// Decide checks single reads against it and the store turns it into the
// SQL predicate every list, count, event and watch query shares.
type Scope struct {
	// All: every namespace. Namespaces and Kinds are then empty, and the
	// store adds no predicate at all.
	All bool
	// Namespaces are the patterns of the namespaces the caller may read:
	// exact names, or prefixes with a trailing "*".
	Namespaces []string
	// Kinds are kinds whose resources the caller reads in every
	// namespace: its team owns them, and an owner team writes its kind's
	// resources everywhere, so it must see them everywhere too.
	Kinds []string
}

// ReadScope returns what caller may read. owners maps kinds to their
// owner teams (kinds without one may be left out). A policy without
// rules, and a caller with a global role, reads everything; anyone else
// reads the namespaces its reader and writer grants cover, and the
// resources of the kinds its teams own.
func (p *Policy) ReadScope(caller string, owners map[string]string) Scope {
	if !p.Enabled() || p.has(caller, RoleAdmin) || p.has(caller, RoleWriter) || p.has(caller, RoleReader) {
		return Scope{All: true}
	}
	var s Scope
	for _, g := range p.grantsOf(caller, RoleReader, RoleWriter) {
		s.Namespaces = append(s.Namespaces, g.namespaces...)
	}
	if slices.Contains(s.Namespaces, "*") {
		return Scope{All: true}
	}
	for kind, owner := range owners {
		if owner != "" && p.member(caller, owner) {
			s.Kinds = append(s.Kinds, kind)
		}
	}
	sort.Strings(s.Namespaces)
	sort.Strings(s.Kinds)
	s.Namespaces = slices.Compact(s.Namespaces)
	return s
}

// Allows reports whether the scope covers a resource of kind in ns.
func (s Scope) Allows(ns, kind string) bool {
	return s.All || NamespaceMatches(s.Namespaces, ns) || slices.Contains(s.Kinds, kind)
}

// Empty reports whether the scope covers nothing at all.
func (s Scope) Empty() bool {
	return !s.All && len(s.Namespaces) == 0 && len(s.Kinds) == 0
}
