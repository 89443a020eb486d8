package authz_test

import (
	"fmt"

	"github.com/convergehq/converge/server/internal/authz"
)

func ExamplePolicy_Decide() {
	team, _ := authz.ParseTeam("data-platform=spiffe://td/ns/data/*")
	p, err := authz.New(authz.WithRole(authz.RoleWriter, "spiffe://td/ns/ci/*"), team)
	if err != nil {
		fmt.Println(err)
		return
	}
	apply := authz.Request{Procedure: "ApplyKind", Need: authz.NeedOf("ApplyKind"),
		Kind: "db.cluster", Owner: "data-platform", Exists: true}
	fmt.Println(p.Decide("spiffe://td/ns/data/carol", apply))
	fmt.Println(p.Decide("spiffe://td/ns/ci/deployer", apply))
	// Output:
	// <nil>
	// permission_denied: spiffe://td/ns/ci/deployer may not call ApplyKind on kind db.cluster: owned by team data-platform (roles: writer; member of: none)
}
