package main

import (
	"strings"
	"testing"

	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/authz"
)

func TestOpenAccessRefusedBeyondLoopback(t *testing.T) {
	open, err := authz.New()
	if err != nil {
		t.Fatal(err)
	}
	ruled, err := authz.New(authz.WithRole(authz.RoleAdmin, "spiffe://td/ops/admin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		listen, role string
		policy       *authz.Policy
		anonymous    bool
		refused      bool
	}{
		{":7070", app.RoleAll, open, false, true},
		{"0.0.0.0:7070", app.RoleControl, open, false, true},
		{"[::]:7070", app.RoleAll, open, false, true},
		{"10.1.2.3:7070", app.RoleAll, open, false, true},
		{"converge.internal:7070", app.RoleAll, open, false, true},
		{"not an address", app.RoleAll, open, false, true},
		{"127.0.0.1:7070", app.RoleAll, open, false, false},
		{"127.0.0.1:0", app.RoleAll, open, false, false},
		{"[::1]:7070", app.RoleAll, open, false, false},
		{"localhost:7070", app.RoleAll, open, false, false},
		{":7070", app.RoleAll, open, true, false},
		{":7070", app.RoleAll, ruled, false, false},
		{":7071", app.RoleBroker, open, false, false},
	} {
		err := checkOpenAccess(c.listen, c.role, c.policy, c.anonymous)
		if (err != nil) != c.refused {
			t.Errorf("%s role %s anonymous=%v: err = %v, want refused=%v", c.listen, c.role, c.anonymous, err, c.refused)
			continue
		}
		if err != nil {
			for _, want := range []string{"--listen " + c.listen, "--admin-ids", "--token-file", "--allow-anonymous"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s: error %q does not name %s", c.listen, err, want)
				}
			}
		}
	}
}

// The flag reaches the check through the flags serve and dev share.
func TestAllowAnonymousFlag(t *testing.T) {
	f := authzTestFlags(t, "--listen", ":7070")
	cfg, err := f.config("postgres://unused")
	if err != nil {
		t.Fatal(err)
	}
	if checkOpenAccess(cfg.Listen, cfg.Role, cfg.Authz, f.authz.allowAnonymous) == nil {
		t.Fatal(":7070 without authorization was accepted")
	}
	f = authzTestFlags(t, "--listen", ":7070", "--allow-anonymous")
	if cfg, err = f.config("postgres://unused"); err != nil {
		t.Fatal(err)
	}
	if err := checkOpenAccess(cfg.Listen, cfg.Role, cfg.Authz, f.authz.allowAnonymous); err != nil {
		t.Fatalf("--allow-anonymous: %v", err)
	}
}
