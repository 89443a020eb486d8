// Package authz decides whether an API caller may make a request: callers
// are mapped from their identity (a verified SPIFFE ID, or a bearer token's
// identity) to global roles (admin, writer, reader), to roles in some
// namespaces (grants) and to teams, and a kind's owner team may change
// that kind's manifest, configs, bindings and policy.
package authz

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/convergehq/converge/server/internal/tlsconf"
)

// Roles a caller can hold.
const (
	// RoleAdmin may do everything.
	RoleAdmin = "admin"
	// RoleWriter may apply and delete resources and run operator actions
	// on them, for every kind.
	RoleWriter = "writer"
	// RoleReader may read.
	RoleReader = "reader"
	// RoleReadSecrets, granted on kinds (--grant read-secrets:KINDS=WHO),
	// may read a resource's secret values in clear (ReadResourceSecrets).
	RoleReadSecrets = "read-secrets"
)

// Policy maps caller identities to roles and teams. The zero Policy (and
// a nil one) has no rules and allows everything: development mode.
type Policy struct {
	roles  map[string][]string // role -> SPIFFE ID patterns
	teams  map[string][]string // team -> SPIFFE ID patterns
	tokens map[string]string   // bearer token -> identity
	grants []grant             // roles in some namespaces only
}

// Option configures a Policy.
type Option func(*Policy) error

// WithRole grants role (RoleAdmin, RoleWriter or RoleReader) to callers
// matching patterns (exact IDs, or prefixes with a trailing "/*").
func WithRole(role string, patterns ...string) Option {
	return func(p *Policy) error {
		switch role {
		case RoleAdmin, RoleWriter, RoleReader:
		default:
			return fmt.Errorf("role %q: must be admin, writer or reader", role)
		}
		if err := checkPatterns("--"+role+"-ids", patterns); err != nil {
			return err
		}
		p.roles[role] = append(p.roles[role], patterns...)
		return nil
	}
}

// WithTeam makes callers matching patterns members of team.
func WithTeam(team string, patterns ...string) Option {
	return func(p *Policy) error {
		if team == "" || strings.ContainsAny(team, " \t=,") {
			return fmt.Errorf("--team %q: the team name must be non-empty without spaces, '=' or ','", team)
		}
		if len(patterns) == 0 {
			return fmt.Errorf("--team %s: needs at least one SPIFFE ID pattern", team)
		}
		if err := checkPatterns("--team "+team, patterns); err != nil {
			return err
		}
		p.teams[team] = append(p.teams[team], patterns...)
		return nil
	}
}

// WithTokens maps bearer tokens to identities, for development setups
// without mutual TLS.
func WithTokens(tokens map[string]string) Option {
	return func(p *Policy) error {
		for tok, id := range tokens {
			if tok == "" || id == "" {
				return fmt.Errorf("tokens: an empty token or identity (token %q, identity %q)", redact(tok), id)
			}
			p.tokens[tok] = id
		}
		return nil
	}
}

// New returns a policy built from opts.
func New(opts ...Option) (*Policy, error) {
	p := &Policy{roles: map[string][]string{}, teams: map[string][]string{}, tokens: map[string]string{}}
	for _, o := range opts {
		if err := o(p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Enabled reports whether the policy has any rule; without one every
// request is allowed.
func (p *Policy) Enabled() bool {
	return p != nil && (len(p.roles) > 0 || len(p.teams) > 0 || len(p.tokens) > 0 || len(p.grants) > 0)
}

// TokenIdentity returns the identity a bearer token maps to.
func (p *Policy) TokenIdentity(token string) (string, bool) {
	if p == nil || token == "" {
		return "", false
	}
	id, ok := p.tokens[token]
	return id, ok
}

// has reports whether id holds role.
func (p *Policy) has(id, role string) bool {
	return tlsconf.Matches(p.roles[role], id)
}

// member reports whether id is a member of team, or of a team above it:
// owner names are paths, and a team owns the ones under its own name. So
// team std.graph owns std.graph/<namespace>/<name>, the owner stdcel gives
// each kind a graph defines, without a team per graph.
func (p *Policy) member(id, team string) bool {
	for t := team; t != ""; {
		if tlsconf.Matches(p.teams[t], id) {
			return true
		}
		i := strings.LastIndexByte(t, '/')
		if i < 0 {
			break
		}
		t = t[:i]
	}
	return false
}

// teamsOf lists the teams id is a member of, sorted.
func (p *Policy) teamsOf(id string) []string {
	var out []string
	for team, pats := range p.teams {
		if tlsconf.Matches(pats, id) {
			out = append(out, team)
		}
	}
	sort.Strings(out)
	return out
}

// ParseTeam parses a --team value, TEAM=PATTERN[,PATTERN...].
func ParseTeam(v string) (Option, error) {
	team, pats, ok := strings.Cut(v, "=")
	if !ok {
		return nil, fmt.Errorf("--team %q: want TEAM=PATTERN[,PATTERN...]", v)
	}
	var patterns []string
	for _, s := range strings.Split(pats, ",") {
		if s = strings.TrimSpace(s); s != "" {
			patterns = append(patterns, s)
		}
	}
	return WithTeam(strings.TrimSpace(team), patterns...), nil
}

// LoadTokens reads a token file: one "TOKEN IDENTITY" per line; blank
// lines and lines starting with # are ignored.
func LoadTokens(file string) (Option, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--token-file: %w", err)
	}
	tokens := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("--token-file %s line %d: want \"TOKEN IDENTITY\", got %d fields", file, n, len(fields))
		}
		if _, dup := tokens[fields[0]]; dup {
			return nil, fmt.Errorf("--token-file %s line %d: token %s appears twice", file, n, redact(fields[0]))
		}
		tokens[fields[0]] = fields[1]
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--token-file %s: %w", file, err)
	}
	return WithTokens(tokens), nil
}

func checkPatterns(flag string, patterns []string) error {
	for _, pat := range patterns {
		if pat == "" || pat == "/*" || strings.ContainsAny(pat, " \t") {
			return fmt.Errorf("%s: pattern %q must be an identity or a prefix ending in /*", flag, pat)
		}
		if strings.Contains(strings.TrimSuffix(pat, "/*"), "*") {
			return fmt.Errorf("%s: pattern %q: '*' is allowed only as a trailing /*", flag, pat)
		}
	}
	return nil
}

// redact keeps a token out of error messages and logs.
func redact(tok string) string {
	if len(tok) <= 4 {
		return "****"
	}
	return tok[:2] + "…"
}

// Roles lists the roles id holds (RoleAdmin, RoleWriter, RoleReader, in
// that order), for telling a caller what it may do before it tries.
func (p *Policy) Roles(id string) []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, role := range []string{RoleAdmin, RoleWriter, RoleReader} {
		if p.has(id, role) {
			out = append(out, role)
		}
	}
	return out
}

// Teams lists the teams id is a member of, sorted.
func (p *Policy) Teams(id string) []string {
	if p == nil {
		return nil
	}
	return p.teamsOf(id)
}
