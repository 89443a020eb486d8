package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/convergehq/converge/server/internal/authz"
)

func authzTestFlags(t *testing.T, args ...string) *serverFlags {
	t.Helper()
	var f serverFlags
	cmd := &cobra.Command{Use: "test"}
	f.register(cmd, ":0")
	if err := cmd.Flags().Parse(args); err != nil {
		t.Fatal(err)
	}
	return &f
}

func TestAuthzFlags(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("tok-bob spiffe://td/ns/web/bob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := authzTestFlags(t, "--admin-ids", "spiffe://td/ops/admin", "--writer-ids", "spiffe://td/ci/*",
		"--reader-ids", "spiffe://td/*", "--team", "data=spiffe://td/ns/data/*,spiffe://td/ns/dba/lead",
		"--team", "web=spiffe://td/ns/web/*", "--token-file", tokens)
	cfg, err := f.config("postgres://unused")
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Authz
	if !p.Enabled() {
		t.Fatal("policy not enabled")
	}
	id, err := p.Identify("", "Bearer tok-bob")
	if err != nil || id != "spiffe://td/ns/web/bob" {
		t.Fatalf("token: %q, %v", id, err)
	}
	kindWrite := authz.Request{Procedure: "ApplyKind", Need: authz.NeedKindOwner, Kind: "k", Owner: "data", Exists: true}
	for caller, allowed := range map[string]bool{
		"spiffe://td/ops/admin": true, "spiffe://td/ns/dba/lead": true, "spiffe://td/ns/data/x": true,
		"spiffe://td/ci/deployer": false, id: false,
	} {
		if err := p.Decide(caller, kindWrite); allowed != (err == nil) {
			t.Errorf("%s: ApplyKind err = %v, want allowed=%v", caller, err, allowed)
		}
	}
	if err := p.Decide("spiffe://td/ci/deployer", authz.Request{Procedure: "ApplyResource", Need: authz.NeedResourceWrite, Kind: "k", Owner: "data", Exists: true}); err != nil {
		t.Errorf("writer: %v", err)
	}

	if cfg, err := authzTestFlags(t).config("postgres://unused"); err != nil || cfg.Authz.Enabled() {
		t.Fatalf("without authorization flags: enabled %v, err %v", cfg.Authz.Enabled(), err)
	}
	for _, bad := range [][]string{{"--team", "noequals"}, {"--team", "web="}, {"--admin-ids", "spiffe://td/*/x"}, {"--token-file", filepath.Join(t.TempDir(), "missing")}} {
		if _, err := authzTestFlags(t, bad...).config("postgres://unused"); err == nil || !strings.Contains(err.Error(), "--") {
			t.Errorf("%v: err = %v, want an error naming the flag", bad, err)
		}
	}
}

// TestGrantFlag: --grant gives a role in namespaces to identities and
// teams, with the token file's identities; a bad value names the flag.
func TestGrantFlag(t *testing.T) {
	f := authzTestFlags(t, "--team", "team-a=spiffe://td/ns/team-a/*",
		"--grant", "writer:team-a-*=team:team-a", "--grant", "reader:shared=spiffe://td/ns/audit/*")
	cfg, err := f.config("postgres://unused")
	if err != nil {
		t.Fatal(err)
	}
	write := func(caller, ns string) error {
		return cfg.Authz.Decide(caller, authz.Request{Procedure: "ApplyResource", Need: authz.NeedResourceWrite, Kind: "k", Namespace: ns, Exists: true})
	}
	if err := write("spiffe://td/ns/team-a/x", "team-a-dev"); err != nil {
		t.Errorf("team grant: %v", err)
	}
	if err := write("spiffe://td/ns/team-a/x", "shared"); err == nil || !strings.Contains(err.Error(), "namespace shared") {
		t.Errorf("outside the grant: %v", err)
	}
	if err := write("spiffe://td/ns/audit/y", "shared"); err == nil {
		t.Error("a reader grant wrote")
	}
	_, err = authzTestFlags(t, "--grant", "owner:a=team:x").config("postgres://unused")
	if err == nil || !strings.Contains(err.Error(), `--grant: role "owner"`) {
		t.Errorf("bad role: %v", err)
	}
}
