package authz

import (
	"fmt"
	"sort"
	"strings"

	"github.com/convergehq/converge/server/internal/tlsconf"
)

// A grant gives a role (RoleReader or RoleWriter) in some namespaces to
// some callers: namespaces are what makes a tenant, so team A can write
// team-a-* and read only what it is granted. A RoleReadSecrets grant
// names kinds instead of namespaces.
type grant struct {
	role       string
	namespaces []string // exact names, or prefixes ending in "*" (kinds for RoleReadSecrets)
	ids        []string // identity patterns, as the other flags take
	teams      []string // teams whose members hold the grant
}

// String renders the grant as --grant takes it, for refusals.
func (g grant) String() string {
	who := append([]string(nil), g.ids...)
	for _, t := range g.teams {
		who = append(who, "team:"+t)
	}
	return g.role + ":" + strings.Join(g.namespaces, ",") + "=" + strings.Join(who, ",")
}

// WithGrant grants role (RoleReader or RoleWriter) in the namespaces
// matching namespaces (exact names, or prefixes with a trailing "*") to
// the callers who matches: identity patterns (exact, or a trailing "/*"),
// or "team:NAME" for the members of a team.
func WithGrant(role string, namespaces []string, who []string) Option {
	return func(p *Policy) error {
		g, err := newGrant(role, namespaces, who)
		if err != nil {
			return err
		}
		p.grants = append(p.grants, g)
		return nil
	}
}

func newGrant(role string, namespaces, who []string) (grant, error) {
	g := grant{role: role}
	if role != RoleReader && role != RoleWriter && role != RoleReadSecrets {
		return g, fmt.Errorf("--grant: role %q: must be reader, writer or read-secrets (admin is global: --admin-ids)", role)
	}
	if len(namespaces) == 0 {
		if role == RoleReadSecrets {
			return g, fmt.Errorf("--grant %s: names no kind", role)
		}
		return g, fmt.Errorf("--grant %s: names no namespace", role)
	}
	for _, ns := range namespaces {
		check := checkNamespacePattern
		if role == RoleReadSecrets {
			check = checkKindPattern
		}
		if err := check(ns); err != nil {
			return g, fmt.Errorf("--grant %s: %w", role, err)
		}
	}
	g.namespaces = namespaces
	if len(who) == 0 {
		return g, fmt.Errorf("--grant %s:%s: names no identity or team", role, strings.Join(namespaces, ","))
	}
	for _, w := range who {
		if team, ok := strings.CutPrefix(w, "team:"); ok {
			if team == "" || strings.ContainsAny(team, " \t=,") {
				return g, fmt.Errorf("--grant %s: %q: a team name must be non-empty without spaces, '=' or ','", role, w)
			}
			g.teams = append(g.teams, team)
			continue
		}
		if err := checkPatterns("--grant "+role, []string{w}); err != nil {
			return g, err
		}
		g.ids = append(g.ids, w)
	}
	return g, nil
}

// checkNamespacePattern accepts a namespace name (lower-case letters,
// digits and '-', as the API takes) with an optional trailing '*'; a lone
// "*" is every namespace.
func checkNamespacePattern(pat string) error {
	name := strings.TrimSuffix(pat, "*")
	if name == "" && pat == "*" {
		return nil
	}
	if name == "" || len(name) > 63 {
		return fmt.Errorf("namespace pattern %q: want a namespace name of 1 to 63 characters, or a prefix ending in *", pat)
	}
	for _, c := range name {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return fmt.Errorf("namespace pattern %q: %q is not allowed; a namespace has lower-case letters, digits and '-', and '*' only at the end", pat, c)
		}
	}
	return nil
}

// ParseGrant parses a --grant value, ROLE:NAMESPACE[,NAMESPACE...]=WHO[,WHO...]
// with WHO an identity pattern or team:NAME.
func ParseGrant(v string) (Option, error) {
	head, who, ok := strings.Cut(v, "=")
	if !ok {
		return nil, fmt.Errorf("--grant %q: want ROLE:NAMESPACES=IDENTITIES, e.g. writer:team-a-*=team:team-a", v)
	}
	role, nss, ok := strings.Cut(head, ":")
	if !ok {
		return nil, fmt.Errorf("--grant %q: %q before '=' wants ROLE:NAMESPACES (reader or writer, then namespaces)", v, head)
	}
	return WithGrant(strings.TrimSpace(role), splitList(nss), splitList(who)), nil
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// holds reports whether caller holds g, directly or through a team.
func (p *Policy) holds(caller string, g grant) bool {
	if tlsconf.Matches(g.ids, caller) {
		return true
	}
	for _, t := range g.teams {
		if p.member(caller, t) {
			return true
		}
	}
	return false
}

// grantsOf returns the grants caller holds with one of roles.
func (p *Policy) grantsOf(caller string, roles ...string) []grant {
	var out []grant
	for _, g := range p.grants {
		for _, r := range roles {
			if g.role == r && p.holds(caller, g) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// NamespaceMatches reports whether namespace ns matches one of patterns
// (exact names, or prefixes with a trailing "*"). It is the Go form of
// the SQL predicate the store builds from the same patterns.
func NamespaceMatches(patterns []string, ns string) bool {
	for _, pat := range patterns {
		if prefix, ok := strings.CutSuffix(pat, "*"); ok {
			if strings.HasPrefix(ns, prefix) {
				return true
			}
		} else if pat == ns {
			return true
		}
	}
	return false
}

// checkKindPattern accepts a kind name (lower-case letters, digits, '.',
// '-' and '_') with an optional trailing '*'; a lone "*" is every kind.
func checkKindPattern(pat string) error {
	name := strings.TrimSuffix(pat, "*")
	if name == "" && pat == "*" {
		return nil
	}
	if name == "" || len(name) > 63 {
		return fmt.Errorf("kind pattern %q: want a kind name of 1 to 63 characters, or a prefix ending in *", pat)
	}
	for _, c := range name {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '.' && c != '_' {
			return fmt.Errorf("kind pattern %q: %q is not allowed; '*' goes only at the end", pat, c)
		}
	}
	return nil
}

// maySeeSecrets reports whether caller holds a read-secrets grant
// covering kind.
func (p *Policy) maySeeSecrets(caller, kind string) bool {
	for _, g := range p.grantsOf(caller, RoleReadSecrets) {
		if NamespaceMatches(g.namespaces, kind) {
			return true
		}
	}
	return false
}

// mayWriteIn reports whether caller holds a writer grant covering ns.
func (p *Policy) mayWriteIn(caller, ns string) bool {
	for _, g := range p.grantsOf(caller, RoleWriter) {
		if NamespaceMatches(g.namespaces, ns) {
			return true
		}
	}
	return false
}

// grantSummary lists the grants caller holds, for refusals.
func (p *Policy) grantSummary(caller string) string {
	var out []string
	for _, g := range p.grantsOf(caller, RoleReader, RoleWriter, RoleReadSecrets) {
		out = append(out, g.role+":"+strings.Join(g.namespaces, ","))
	}
	if len(out) == 0 {
		return "none"
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// Grants lists the grants caller holds as ROLE:NAMESPACES, sorted, for
// WhoAmI.
func (p *Policy) Grants(caller string) []string {
	if p == nil {
		return nil
	}
	s := p.grantSummary(caller)
	if s == "none" {
		return nil
	}
	return strings.Split(s, " ")
}
