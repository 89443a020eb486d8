package authz_test

import (
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/server/internal/authz"
)

const (
	alice  = "spiffe://td/ns/team-a/alice" // team team-a: writer in team-a-*
	viewer = "spiffe://td/ns/audit/eve"    // reader in team-a-1 and team-b, read-secrets on db.*
)

func tenantPolicy(t *testing.T) *authz.Policy {
	t.Helper()
	var opts []authz.Option
	for _, v := range []string{"writer:team-a-*=team:team-a", "reader:team-a-1, team-b=" + viewer, "read-secrets:db.*=" + viewer} {
		o, err := authz.ParseGrant(v)
		if err != nil {
			t.Fatalf("ParseGrant(%q): %v", v, err)
		}
		opts = append(opts, o)
	}
	team, err := authz.ParseTeam("team-a=spiffe://td/ns/team-a/*")
	if err != nil {
		t.Fatal(err)
	}
	p, err := authz.New(append(opts, team,
		authz.WithRole(authz.RoleAdmin, admin), authz.WithRole(authz.RoleWriter, writer), authz.WithRole(authz.RoleReader, reader),
		authz.WithTeam("data-platform", "spiffe://td/ns/data/*"))...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseGrantErrors(t *testing.T) {
	for in, want := range map[string]string{
		"writer:team-a":           "want ROLE:NAMESPACES=IDENTITIES",
		"writer=team:x":           `"writer" before '=' wants ROLE:NAMESPACES`,
		"admin:a=team:x":          `role "admin": must be reader, writer or read-secrets`,
		"read-secrets:=team:x":    "names no kind",
		"read-secrets:A*=team:x":  `kind pattern "A*": 'A' is not allowed`,
		"reader:=team:x":          "names no namespace",
		"reader:a=":               "names no identity or team",
		"reader:Team=team:x":      `namespace pattern "Team": 'T' is not allowed`,
		"reader:a*b=team:x":       `namespace pattern "a*b": '*' is not allowed`,
		"reader:a=team:":          `"team:": a team name must be non-empty`,
		"reader:a=spiffe://x/*/y": "'*' is allowed only as a trailing /*",
		"reader:a=a b":            "must be an identity or a prefix ending in /*",
	} {
		o, err := authz.ParseGrant(in)
		if err == nil {
			_, err = authz.New(o)
		}
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--grant") {
			t.Errorf("ParseGrant(%q): %v, want an error naming --grant and containing %q", in, err, want)
		}
	}
}

// FuzzParseGrant: any input parses or fails with an error naming the
// flag; nothing panics, and a grant that parses grants only the roles
// reader, writer and read-secrets.
func FuzzParseGrant(f *testing.F) {
	for _, s := range []string{"writer:team-a-*=team:team-a", "reader:*=spiffe://td/*", "reader:a,b=x,team:y", ":=", "a:b=c=d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		o, err := authz.ParseGrant(in)
		if err == nil {
			_, err = authz.New(o)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "--grant") {
				t.Fatalf("ParseGrant(%q): error %q does not name --grant", in, err)
			}
			return
		}
		role, _, _ := strings.Cut(in, ":")
		if r := strings.TrimSpace(role); r != authz.RoleReader && r != authz.RoleWriter && r != authz.RoleReadSecrets {
			t.Fatalf("ParseGrant(%q) accepted role %q", in, r)
		}
	})
}

// TestReadSecretsNeedsTheGrantAndTheNamespace: a read-secrets grant is
// on kinds, and adds to the right to read the namespace; reading alone,
// even as a writer, never reads secrets.
func TestReadSecretsNeedsTheGrantAndTheNamespace(t *testing.T) {
	p := tenantPolicy(t)
	read := func(caller, ns, kind string) error {
		return p.Decide(caller, authz.Request{Procedure: "ReadResourceSecrets", Need: authz.NeedReadSecrets, Kind: kind, Namespace: ns})
	}
	if err := read(viewer, "team-b", "db.cluster"); err != nil {
		t.Errorf("viewer reading db.cluster secrets in team-b: %v", err)
	}
	for _, c := range []struct{ caller, ns, kind, why string }{
		{viewer, "team-b", "app.web", "read-secrets grant covering kind app.web"},
		{viewer, "team-c", "db.cluster", "namespace team-c"},
		{writer, "team-b", "db.cluster", "read-secrets grant"},
		{alice, "team-a-1", "db.cluster", "read-secrets grant"},
	} {
		err := read(c.caller, c.ns, c.kind)
		if connect.CodeOf(err) != connect.CodePermissionDenied || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s reading %s secrets in %s: %v, want PermissionDenied naming %q", c.caller, c.kind, c.ns, err, c.why)
		}
	}
}

func TestGrantDecisions(t *testing.T) {
	p := tenantPolicy(t)
	write := func(caller, ns, owner string) error {
		return p.Decide(caller, authz.Request{Procedure: "ApplyResource", Need: authz.NeedResourceWrite,
			Kind: "db.cluster", Namespace: ns, Owner: owner, Exists: true})
	}
	read := func(caller, ns string) error {
		return p.Decide(caller, authz.Request{Procedure: "GetResource", Need: authz.NeedRead, Kind: "db.cluster", Namespace: ns})
	}
	for _, c := range []struct {
		name string
		err  error
		deny string // "" allowed, else a part of the refusal
	}{
		{"team grant writes its namespaces", write(alice, "team-a-1", ""), ""},
		{"team grant does not write others", write(alice, "team-b", "data-platform"),
			alice + " may not call ApplyResource on kind db.cluster in namespace team-b: needs role writer or admin, or team data-platform that owns the kind, or a writer grant covering namespace team-b (roles: none; member of: team-a; grants: writer:team-a-*)"},
		{"the prefix is not a substring", write(alice, "team-a", ""), "namespace team-a:"},
		{"a reader grant does not write", write(viewer, "team-b", ""), "grants: read-secrets:db.* reader:team-a-1,team-b"},
		{"global writer writes everywhere", write(writer, "team-b", ""), ""},
		{"owner team writes everywhere", write("spiffe://td/ns/data/carol", "team-b", "data-platform"), ""},
		{"writer grant reads", read(alice, "team-a-7"), ""},
		{"reader grant reads", read(viewer, "team-b"), ""},
		{"no grant no read", read(alice, "team-b"), "may not call GetResource on kind db.cluster in namespace team-b: needs role reader, writer or admin, or a reader or writer grant covering namespace team-b"},
		{"global reader reads everywhere", read(reader, "team-b"), ""},
		{"anyone with a grant reads kinds", p.Decide(viewer, authz.Request{Procedure: "ListKinds", Need: authz.NeedRead}), ""},
	} {
		switch {
		case c.deny == "" && c.err != nil:
			t.Errorf("%s: %v", c.name, c.err)
		case c.deny != "" && (c.err == nil || connect.CodeOf(c.err) != connect.CodePermissionDenied || !strings.Contains(c.err.Error(), c.deny)):
			t.Errorf("%s: %v, want PermissionDenied with %q", c.name, c.err, c.deny)
		}
	}
}

func TestReadScope(t *testing.T) {
	p := tenantPolicy(t)
	owners := map[string]string{"db.cluster": "data-platform", "web.app": "team-a"}
	for _, c := range []struct {
		caller string
		want   authz.Scope
	}{
		{writer, authz.Scope{All: true}},
		{reader, authz.Scope{All: true}},
		{alice, authz.Scope{Namespaces: []string{"team-a-*"}, Kinds: []string{"web.app"}}},
		{viewer, authz.Scope{Namespaces: []string{"team-a-1", "team-b"}}},
		{"spiffe://td/ns/data/carol", authz.Scope{Kinds: []string{"db.cluster"}}},
		{nobody, authz.Scope{}},
	} {
		got := p.ReadScope(c.caller, owners)
		if got.All != c.want.All || !slices.Equal(got.Namespaces, c.want.Namespaces) || !slices.Equal(got.Kinds, c.want.Kinds) {
			t.Errorf("ReadScope(%s) = %+v, want %+v", c.caller, got, c.want)
		}
	}
	if !p.ReadScope(alice, owners).Allows("team-b", "web.app") || p.ReadScope(alice, owners).Allows("team-b", "db.cluster") {
		t.Error("Allows: an owner team reads its kind everywhere and nothing else outside its grants")
	}
	var none *authz.Policy
	if !none.ReadScope(nobody, nil).All {
		t.Error("a nil policy must read everything")
	}
}

// TestMatrixInNamespaces decides every ControlService method for every
// kind of caller in two namespaces: team-a-1 (alice's writer grant covers
// it, viewer's reader grant too) and team-b (viewer reads it), on a kind
// owned by data-platform. Methods that touch one resource carry its
// namespace; kind-level ones carry none.
func TestMatrixInNamespaces(t *testing.T) {
	p := tenantPolicy(t)
	const carol = "spiffe://td/ns/data/carol"
	type key struct {
		need authz.Need
		ns   string
	}
	everywhere := func(needs ...authz.Need) map[key]bool {
		m := map[key]bool{}
		for _, n := range needs {
			m[key{n, "team-a-1"}], m[key{n, "team-b"}] = true, true
		}
		return m
	}
	allowed := map[string]map[key]bool{
		admin:  everywhere(authz.NeedRead, authz.NeedResourceWrite, authz.NeedKindOwner, authz.NeedAdmin, authz.NeedReadSecrets),
		writer: everywhere(authz.NeedRead, authz.NeedResourceWrite),
		reader: everywhere(authz.NeedRead),
		carol:  everywhere(authz.NeedRead, authz.NeedResourceWrite, authz.NeedKindOwner),
		alice:  {{authz.NeedRead, "team-a-1"}: true, {authz.NeedResourceWrite, "team-a-1"}: true},
		viewer: {{authz.NeedRead, "team-a-1"}: true, {authz.NeedRead, "team-b"}: true,
			{authz.NeedReadSecrets, "team-a-1"}: true, {authz.NeedReadSecrets, "team-b"}: true},
		nobody: {},
	}
	for _, m := range controlMethods(t) {
		need := authz.NeedOf(m)
		for _, ns := range []string{"team-a-1", "team-b"} {
			for caller, ok := range allowed {
				r := authz.Request{Procedure: m, Need: need, Kind: "db.cluster", Owner: "data-platform", Exists: true}
				if need == authz.NeedRead || need == authz.NeedResourceWrite || need == authz.NeedReadSecrets {
					r.Namespace = ns
				}
				err := p.Decide(caller, r)
				switch want := ok[key{need, ns}]; {
				case want && err != nil:
					t.Errorf("%s in %s by %q: %v, want allowed", m, ns, caller, err)
				case !want && connect.CodeOf(err) != connect.CodePermissionDenied:
					t.Errorf("%s in %s by %q: %v, want PermissionDenied", m, ns, caller, err)
				case !want && r.Namespace != "" && !strings.Contains(err.Error(), m+" on kind db.cluster in namespace "+ns):
					t.Errorf("%s in %s by %q: %v does not name the procedure and namespace", m, ns, caller, err)
				}
			}
		}
	}
}
