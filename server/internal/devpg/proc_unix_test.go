//go:build unix

package devpg

import (
	"os"
	"os/user"
	"strings"
	"testing"
)

func TestRootNeedsPostgresUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root switches to the postgres user; this test runs as uid", os.Geteuid())
	}
	orig := lookupUser
	lookupUser = func(name string) (*user.User, error) { return nil, user.UnknownUserError(name) }
	t.Cleanup(func() { lookupUser = orig })

	_, err := serverOwner()
	if err == nil || !strings.Contains(err.Error(), `OS user "postgres"`) || !strings.Contains(err.Error(), "unknown user postgres") {
		t.Errorf("serverOwner error = %v, want one naming the missing postgres user", err)
	}
}
