package authz_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/authz"
)

const (
	admin  = "spiffe://td/ns/ops/admin"
	writer = "spiffe://td/ns/ci/deployer"
	reader = "spiffe://td/ns/ro/viewer"
	owner  = "spiffe://td/ns/data/carol"
	other  = "spiffe://td/ns/web/bob"
	nobody = "spiffe://td/ns/misc/dave"
	anon   = ""
)

func testPolicy(t *testing.T) *authz.Policy {
	t.Helper()
	team, err := authz.ParseTeam("data-platform=spiffe://td/ns/data/*")
	if err != nil {
		t.Fatal(err)
	}
	web, err := authz.ParseTeam("web=spiffe://td/ns/web/*,spiffe://td/ns/extra/x")
	if err != nil {
		t.Fatal(err)
	}
	p, err := authz.New(
		authz.WithRole(authz.RoleAdmin, admin),
		authz.WithRole(authz.RoleWriter, "spiffe://td/ns/ci/*"),
		authz.WithRole(authz.RoleReader, reader),
		team, web)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// controlMethods lists ControlService's methods from its descriptor, so a
// new RPC cannot escape the matrix.
func controlMethods(t *testing.T) []string {
	t.Helper()
	svc := convergev1.File_converge_v1_control_proto.Services().ByName("ControlService")
	if svc == nil {
		t.Fatal("ControlService descriptor not found")
	}
	var out []string
	for i := range svc.Methods().Len() {
		out = append(out, string(svc.Methods().Get(i).Name()))
	}
	return out
}

// TestMatrix decides every ControlService method for every role on an
// existing kind owned by data-platform.
func TestMatrix(t *testing.T) {
	p := testPolicy(t)
	allowed := map[string]map[authz.Need]bool{
		admin:  {authz.NeedRead: true, authz.NeedResourceWrite: true, authz.NeedKindOwner: true, authz.NeedAdmin: true, authz.NeedReadSecrets: true},
		writer: {authz.NeedRead: true, authz.NeedResourceWrite: true},
		reader: {authz.NeedRead: true},
		owner:  {authz.NeedRead: true, authz.NeedResourceWrite: true, authz.NeedKindOwner: true},
		other:  {authz.NeedRead: true},
		nobody: {},
		anon:   {},
	}
	methods := controlMethods(t)
	if len(methods) < 30 {
		t.Fatalf("only %d methods in ControlService", len(methods))
	}
	for _, m := range methods {
		need := authz.NeedOf(m)
		if !authz.Listed(m) {
			t.Errorf("%s has no entry in the needs map (it would be admin-only)", m)
		}
		for caller, ok := range allowed {
			r := authz.Request{Procedure: m, Need: need}
			if need != authz.NeedRead {
				r.Kind, r.Owner, r.Exists = "db.cluster", "data-platform", true
			}
			err := p.Decide(caller, r)
			switch {
			case ok[need] && err != nil:
				t.Errorf("%s by %q: %v, want allowed", m, caller, err)
			case !ok[need] && connect.CodeOf(err) != connect.CodePermissionDenied:
				t.Errorf("%s by %q: %v, want PermissionDenied", m, caller, err)
			case !ok[need] && !strings.Contains(err.Error(), m):
				t.Errorf("%s by %q: %v does not name the procedure", m, caller, err)
			}
		}
	}
}

func TestWritesAreNotReads(t *testing.T) {
	for m, want := range map[string]authz.Need{
		"ApplyKind": authz.NeedKindOwner, "DeleteKind": authz.NeedKindOwner, "UpdateKindPolicy": authz.NeedKindOwner,
		"ApplyProviderConfig": authz.NeedKindOwner, "DeleteProviderConfig": authz.NeedKindOwner,
		"ApplyReactorBinding": authz.NeedKindOwner, "DeleteReactorBinding": authz.NeedKindOwner,
		"StartRollout": authz.NeedKindOwner, "PauseRollout": authz.NeedKindOwner, "ResumeRollout": authz.NeedKindOwner,
		"AbortRollout": authz.NeedKindOwner, "RollbackRollout": authz.NeedKindOwner,
		"ApplyResource": authz.NeedResourceWrite, "ApplyResources": authz.NeedResourceWrite,
		"DeleteResource": authz.NeedResourceWrite, "RollbackResource": authz.NeedResourceWrite,
		"QuarantineResource": authz.NeedResourceWrite, "UnquarantineResource": authz.NeedResourceWrite,
		"ReconcileResource": authz.NeedResourceWrite, "InvokeOperation": authz.NeedResourceWrite,
		"SetManagementPolicy": authz.NeedResourceWrite,
		"NoSuchMethod":        authz.NeedAdmin,
	} {
		if got := authz.NeedOf(m); got != want {
			t.Errorf("NeedOf(%s) = %v, want %v", m, got, want)
		}
	}
}

func TestDenialMessage(t *testing.T) {
	p := testPolicy(t)
	err := p.Decide(other, authz.Request{Procedure: "ApplyKind", Need: authz.NeedKindOwner,
		Kind: "db.cluster", Owner: "data-platform", Exists: true, NewOwner: "data-platform"})
	want := "spiffe://td/ns/web/bob may not call ApplyKind on kind db.cluster: owned by team data-platform (roles: none; member of: web)"
	var ce *connect.Error
	if !asConnect(err, &ce) || ce.Message() != want {
		t.Fatalf("err = %v\nwant message %q", err, want)
	}
	err = p.Decide(anon, authz.Request{Procedure: "ListKinds", Need: authz.NeedRead})
	if connect.CodeOf(err) != connect.CodePermissionDenied || !strings.Contains(err.Error(), "anonymous caller") {
		t.Fatalf("anonymous read: %v", err)
	}
}

func asConnect(err error, ce **connect.Error) bool {
	c, ok := err.(*connect.Error)
	*ce = c
	return ok
}

func TestKindOwnership(t *testing.T) {
	p := testPolicy(t)
	cases := []struct {
		name   string
		caller string
		r      authz.Request
		allow  bool
		why    string
	}{
		{"new kind, member of declared owner", owner, authz.Request{NewOwner: "data-platform"}, true, ""},
		{"new kind, not a member", other, authz.Request{NewOwner: "data-platform"}, false, "manifest names owner team data-platform"},
		{"new kind without owner", owner, authz.Request{}, false, "no owner team"},
		{"new kind without owner, admin", admin, authz.Request{}, true, ""},
		{"unowned kind", owner, authz.Request{Exists: true, NewOwner: "data-platform"}, false, "no owner team"},
		{"owner changes owner", owner, authz.Request{Exists: true, Owner: "data-platform", NewOwner: "web"}, false, "needs role admin"},
		{"admin changes owner", admin, authz.Request{Exists: true, Owner: "data-platform", NewOwner: "web"}, true, ""},
		{"owner keeps owner", owner, authz.Request{Exists: true, Owner: "data-platform", NewOwner: "data-platform"}, true, ""},
		{"writer is not an owner", writer, authz.Request{Exists: true, Owner: "data-platform"}, false, "owned by team data-platform"},
	}
	for _, c := range cases {
		c.r.Procedure, c.r.Need, c.r.Kind = "ApplyKind", authz.NeedKindOwner, "db.cluster"
		err := p.Decide(c.caller, c.r)
		if c.allow != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.why)) {
			t.Errorf("%s: err = %v, want allowed=%v (%q)", c.name, err, c.allow, c.why)
		}
	}
	// Resource writes on a kind not registered: owners do not apply.
	if err := p.Decide(owner, authz.Request{Procedure: "ApplyResource", Need: authz.NeedResourceWrite, Kind: "x"}); err == nil {
		t.Error("team member wrote a resource of an unregistered kind")
	}
}

func TestNoRulesAllowsAll(t *testing.T) {
	for _, p := range []*authz.Policy{nil, mustNew(t)} {
		if p.Enabled() {
			t.Fatal("a policy without rules is enabled")
		}
		if err := p.Decide(anon, authz.Request{Procedure: "DeleteKind", Need: authz.NeedAdmin}); err != nil {
			t.Fatalf("no rules: %v", err)
		}
		// Dev clients that send a token keep working.
		if id, err := p.Identify("", "Bearer whatever"); err != nil || id != "" {
			t.Fatalf("Identify without rules = %q, %v", id, err)
		}
	}
}

func mustNew(t *testing.T, opts ...authz.Option) *authz.Policy {
	t.Helper()
	p, err := authz.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTokens(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("# dev tokens\n\ns3cret-a  spiffe://td/ns/ops/admin\ns3cret-b user:bob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opt, err := authz.LoadTokens(file)
	if err != nil {
		t.Fatal(err)
	}
	p := mustNew(t, opt, authz.WithRole(authz.RoleAdmin, admin))
	if id, err := p.Identify("", "Bearer s3cret-a"); err != nil || id != admin {
		t.Fatalf("token a = %q, %v", id, err)
	}
	if id, err := p.Identify(writer, "Bearer s3cret-a"); err != nil || id != writer {
		t.Fatalf("a verified SPIFFE ID must win over a token: %q, %v", id, err)
	}
	if id, err := p.Identify("", ""); err != nil || id != "" {
		t.Fatalf("no credentials = %q, %v", id, err)
	}
	if _, err := p.Identify("", "Bearer nope"); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("unknown token: %v", err)
	}
	for name, content := range map[string]string{
		"fields": "only-one-field\n",
		"dup":    "t1 a\nt1 b\n",
	} {
		bad := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(bad, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := authz.LoadTokens(bad); err == nil || !strings.Contains(err.Error(), "line") {
			t.Errorf("%s: err = %v, want a line-numbered error", name, err)
		}
	}
}

func TestBadOptions(t *testing.T) {
	for name, opt := range map[string]authz.Option{
		"role":         authz.WithRole("root", admin),
		"star inside":  authz.WithRole(authz.RoleAdmin, "spiffe://td/*/x"),
		"team no ids":  authz.WithTeam("web"),
		"team bad":     authz.WithTeam("a b", other),
		"empty token":  authz.WithTokens(map[string]string{"": "x"}),
		"empty prefix": authz.WithTeam("web", "/*"),
	} {
		if _, err := authz.New(opt); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := authz.ParseTeam("no-equals"); err == nil {
		t.Error("ParseTeam without = accepted")
	}
}

// A team owns the owner names under its own, so one team can own every
// kind a std.graph defines (owner std.graph/<namespace>/<name>).
func TestTeamOwnsOwnersBelowIt(t *testing.T) {
	graphs, err := authz.ParseTeam("std.graph=spiffe://td/ns/std/worker")
	if err != nil {
		t.Fatal(err)
	}
	p, err := authz.New(graphs)
	if err != nil {
		t.Fatal(err)
	}
	const worker = "spiffe://td/ns/std/worker"
	for _, c := range []struct {
		owner   string
		allowed bool
	}{
		{"std.graph", true},
		{"std.graph/default/web", true},
		{"std.graph/a/b/c", true},
		{"std.graphs/default/web", false},
		{"other/std.graph", false},
		{"std", false},
	} {
		err := p.Decide(worker, authz.Request{Procedure: "ApplyKind", Need: authz.NeedKindOwner, NewOwner: c.owner})
		if (err == nil) != c.allowed {
			t.Errorf("team std.graph registering a kind owned by %q: err = %v, want allowed %v", c.owner, err, c.allowed)
		}
	}
}
