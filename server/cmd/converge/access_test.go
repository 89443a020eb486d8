package main

import (
	"strings"
	"testing"

	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/authz"
	"github.com/convergehq/converge/server/internal/tlsconf"
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
	mtls := tlsconf.Config{CertFile: "c", KeyFile: "k", ClientCAFile: "ca"}
	optional := mtls
	optional.ClientAuth = tlsconf.ClientAuthRequest
	for _, c := range []struct {
		listen, role string
		policy       *authz.Policy
		tls          tlsconf.Config
		anonymous    bool
		refused      bool
	}{
		{":7070", app.RoleAll, open, tlsconf.Config{}, false, true},
		{"0.0.0.0:7070", app.RoleControl, open, tlsconf.Config{}, false, true},
		{"[::]:7070", app.RoleAll, open, tlsconf.Config{}, false, true},
		{"10.1.2.3:7070", app.RoleAll, open, tlsconf.Config{}, false, true},
		{"converge.internal:7070", app.RoleAll, open, tlsconf.Config{}, false, true},
		{"not an address", app.RoleAll, open, tlsconf.Config{}, false, true},
		{"127.0.0.1:7070", app.RoleAll, open, tlsconf.Config{}, false, false},
		{"127.0.0.1:0", app.RoleAll, open, tlsconf.Config{}, false, false},
		{"[::1]:7070", app.RoleAll, open, tlsconf.Config{}, false, false},
		{"localhost:7070", app.RoleAll, open, tlsconf.Config{}, false, false},
		{":7070", app.RoleAll, open, tlsconf.Config{}, true, false},
		{":7070", app.RoleAll, ruled, tlsconf.Config{}, false, false},
		// A broker: workers are identified by tokens or client certificates.
		{":7071", app.RoleBroker, open, tlsconf.Config{}, false, true},
		{":7071", app.RoleBroker, open, optional, false, true},
		{":7071", app.RoleBroker, open, mtls, false, false},
		{":7071", app.RoleBroker, ruled, tlsconf.Config{}, false, false},
		{":7071", app.RoleBroker, open, tlsconf.Config{}, true, false},
		{"127.0.0.1:7071", app.RoleBroker, open, tlsconf.Config{}, false, false},
	} {
		err := checkOpenAccess(c.listen, c.role, c.policy, c.tls, c.anonymous)
		if (err != nil) != c.refused {
			t.Errorf("%s role %s anonymous=%v: err = %v, want refused=%v", c.listen, c.role, c.anonymous, err, c.refused)
			continue
		}
		if err != nil {
			wants := []string{"--listen " + c.listen, "--admin-ids", "--token-file", "--allow-anonymous"}
			if c.role == app.RoleBroker {
				wants = []string{"--listen " + c.listen, "--token-file", "--tls-client-ca", "--allow-anonymous"}
			}
			for _, want := range wants {
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
	if checkOpenAccess(cfg.Listen, cfg.Role, cfg.Authz, cfg.TLS, f.authz.allowAnonymous) == nil {
		t.Fatal(":7070 without authorization was accepted")
	}
	f = authzTestFlags(t, "--listen", ":7070", "--allow-anonymous")
	if cfg, err = f.config("postgres://unused"); err != nil {
		t.Fatal(err)
	}
	if err := checkOpenAccess(cfg.Listen, cfg.Role, cfg.Authz, cfg.TLS, f.authz.allowAnonymous); err != nil {
		t.Fatalf("--allow-anonymous: %v", err)
	}
}
