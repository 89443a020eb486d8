package authz_test

import (
	"slices"
	"testing"

	"github.com/convergehq/converge/server/internal/authz"
)

func TestRolesAndTeams(t *testing.T) {
	p := testPolicy(t)
	for _, c := range []struct {
		caller       string
		roles, teams []string
	}{
		{admin, []string{authz.RoleAdmin}, nil},
		{"spiffe://td/ns/ci/x", []string{authz.RoleWriter}, nil},
		{reader, []string{authz.RoleReader}, nil},
		{owner, nil, []string{"data-platform"}},
		{"spiffe://td/ns/extra/x", nil, []string{"web"}},
		{anon, nil, nil},
	} {
		if got := p.Roles(c.caller); !slices.Equal(got, c.roles) {
			t.Errorf("Roles(%q) = %v, want %v", c.caller, got, c.roles)
		}
		if got := p.Teams(c.caller); !slices.Equal(got, c.teams) {
			t.Errorf("Teams(%q) = %v, want %v", c.caller, got, c.teams)
		}
	}
	var none *authz.Policy
	if none.Roles(admin) != nil || none.Teams(owner) != nil {
		t.Error("a nil policy reports roles or teams")
	}
}
