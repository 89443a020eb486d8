package authz

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"connectrpc.com/connect"
)

// Need is what a request needs of its caller.
type Need int

// Needs, from least to most.
const (
	// NeedRead: any role, grant or team membership; in a namespace (a read
	// of one resource), a global role, a grant covering the namespace, or
	// membership of the owner team of the resource's kind.
	NeedRead Need = iota + 1
	// NeedResourceWrite: writer, admin, a writer grant covering the
	// resource's namespace, or membership of the owner team of the
	// resource's kind.
	NeedResourceWrite
	// NeedKindOwner: admin, or membership of the kind's owner team. A kind
	// without an owner team is the admins' alone.
	NeedKindOwner
	// NeedAdmin: admin only.
	NeedAdmin
	// NeedReadSecrets: a read-secrets grant covering the resource's kind
	// together with the right to read its namespace, or admin. Reading a
	// resource does not read its secrets: they show redacted.
	NeedReadSecrets
)

// Request is one decision's input.
type Request struct {
	// Procedure is the RPC's short name, e.g. "ApplyKind", for messages.
	Procedure string
	Need      Need
	// Kind is the kind the request touches ("" for reads and admin-only
	// requests).
	Kind string
	// Namespace is the namespace of the resource a resource write or a
	// read of one resource touches; "" for everything else.
	Namespace string
	// Owner is the kind's current owner team ("" if none, or the kind is
	// not registered).
	Owner string
	// Exists reports whether the kind is registered.
	Exists bool
	// NewOwner, for ApplyKind, is the owner team the manifest declares.
	NewOwner string
}

// Decide returns nil if caller (an identity; "" for an anonymous caller)
// may make r, else a Connect PermissionDenied error naming the caller,
// the procedure, the namespace and what is missing. A policy without
// rules allows all.
func (p *Policy) Decide(caller string, r Request) error {
	if !p.Enabled() || p.has(caller, RoleAdmin) {
		return nil
	}
	switch r.Need {
	case NeedRead:
		return p.decideRead(caller, r)
	case NeedResourceWrite:
		if p.has(caller, RoleWriter) || (r.Exists && p.member(caller, r.Owner)) ||
			(r.Namespace != "" && p.mayWriteIn(caller, r.Namespace)) {
			return nil
		}
		why := "needs role writer or admin"
		if r.Owner != "" {
			why += ", or team " + r.Owner + " that owns the kind"
		}
		if r.Namespace != "" {
			why += ", or a writer grant covering namespace " + r.Namespace
		}
		return p.deny(caller, r, why)
	case NeedKindOwner:
		return p.decideOwner(caller, r)
	case NeedReadSecrets:
		if !p.maySeeSecrets(caller, r.Kind) {
			return p.deny(caller, r, "needs a read-secrets grant covering kind "+r.Kind+" (--grant read-secrets:KINDS=IDENTITIES) or role admin")
		}
		return p.decideRead(caller, r)
	}
	return p.deny(caller, r, "needs role admin")
}

// decideRead: reading anything needs some right somewhere; reading one
// resource needs the right to read its namespace (or its kind). The
// answer for a namespace the caller may not read is PermissionDenied
// whether or not the resource exists, so a refusal tells nothing about
// what is there.
func (p *Policy) decideRead(caller string, r Request) error {
	if r.Namespace == "" {
		if p.has(caller, RoleReader) || p.has(caller, RoleWriter) || len(p.teamsOf(caller)) > 0 ||
			len(p.grantsOf(caller, RoleReader, RoleWriter)) > 0 {
			return nil
		}
		return p.deny(caller, r, "needs role reader, writer or admin, a grant, or a team membership")
	}
	if p.ReadScope(caller, map[string]string{r.Kind: r.Owner}).Allows(r.Namespace, r.Kind) {
		return nil
	}
	why := "needs role reader, writer or admin, or a reader or writer grant covering namespace " + r.Namespace
	if r.Owner != "" {
		why += ", or team " + r.Owner + " that owns the kind"
	}
	return p.deny(caller, r, why)
}

func (p *Policy) decideOwner(caller string, r Request) error {
	switch {
	case !r.Exists && r.NewOwner == "":
		return p.deny(caller, r, "the kind has no owner team, so it needs role admin")
	case !r.Exists:
		// A new kind: its declared owner team may register it.
		if p.member(caller, r.NewOwner) {
			return nil
		}
		return p.deny(caller, r, fmt.Sprintf("the manifest names owner team %s", r.NewOwner))
	case r.Owner == "":
		return p.deny(caller, r, "the kind has no owner team, so it needs role admin")
	case !p.member(caller, r.Owner):
		return p.deny(caller, r, fmt.Sprintf("owned by team %s", r.Owner))
	case r.NewOwner != "" && r.NewOwner != r.Owner:
		// Handing a kind to another team is an admin's call, so a typo
		// cannot lock its owners out.
		return p.deny(caller, r, fmt.Sprintf("owned by team %s; changing the owner to %s needs role admin", r.Owner, r.NewOwner))
	}
	return nil
}

func (p *Policy) deny(caller string, r Request, why string) error {
	who := caller
	if who == "" {
		who = "an anonymous caller (no client certificate with a SPIFFE ID, no bearer token)"
	}
	what := r.Procedure
	if r.Kind != "" {
		what += " on kind " + r.Kind
	}
	if r.Namespace != "" {
		what += " in namespace " + r.Namespace
	}
	teams := "none"
	if ts := p.teamsOf(caller); len(ts) > 0 {
		teams = strings.Join(ts, ", ")
	}
	var roles []string
	for _, role := range []string{RoleWriter, RoleReader} {
		if p.has(caller, role) {
			roles = append(roles, role)
		}
	}
	held := "none"
	if len(roles) > 0 {
		held = strings.Join(roles, ", ")
	}
	detail := fmt.Sprintf("roles: %s; member of: %s", held, teams)
	if len(p.grants) > 0 {
		detail += "; grants: " + p.grantSummary(caller)
	}
	return connect.NewError(connect.CodePermissionDenied,
		fmt.Errorf("%s may not call %s: %s (%s)", who, what, why, detail))
}

type callerKey struct{}

// WithCaller returns ctx carrying the caller's identity, for audit.
func WithCaller(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callerKey{}, id)
}

// CallerFrom returns the identity WithCaller put in ctx.
func CallerFrom(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(callerKey{}).(string)
	return id, ok && id != ""
}

// ErrUnknownToken is returned by Identify for a bearer token the policy
// does not know.
var ErrUnknownToken = errors.New("bearer token is not in --token-file")

// Identify returns the caller's identity: the verified SPIFFE ID spiffeID
// if there is one, else the identity of the bearer token in the
// Authorization header value auth. An unknown token is an error (Connect
// Unauthenticated); no credentials at all is the anonymous caller "". A
// policy without rules ignores tokens.
func (p *Policy) Identify(spiffeID, auth string) (string, error) {
	if spiffeID != "" {
		return spiffeID, nil
	}
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || strings.TrimSpace(tok) == "" || !p.Enabled() {
		return "", nil
	}
	id, known := p.TokenIdentity(strings.TrimSpace(tok))
	if !known {
		return "", connect.NewError(connect.CodeUnauthenticated, ErrUnknownToken)
	}
	return id, nil
}
