package main

import (
	"fmt"
	"regexp"

	"github.com/convergehq/converge/sdk-go/converge"
)

// zoneSpec is the spec of kind landingzone v1.
type zoneSpec struct {
	// Prefix starts every child's name.
	Prefix string `json:"prefix"`
	// Accounts is how many accounts (each with a VPC and a route) to have.
	Accounts int `json:"accounts"`
	// VPCCIDR is every VPC's address range; empty means defaultVPCCIDR.
	VPCCIDR string `json:"vpc_cidr,omitempty"`
}

// zoneStatus is the status of kind landingzone v1.
type zoneStatus struct {
	Accounts int `json:"accounts"`
}

// Bounds of the spec, as kinds.yaml declares them.
const (
	maxAccounts    = 10000
	maxPrefixLen   = 200 // keeps "<prefix>-route-9999" within a name's 253 characters
	defaultVPCCIDR = "10.0.0.0/16"
	// defaultDestination is where a landing zone's route sends traffic.
	defaultDestination = "0.0.0.0/0"
)

var prefixPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// Names of a zone's children for account i.
func accountName(prefix string, i int) string { return fmt.Sprintf("%s-acct-%d", prefix, i) }
func vpcName(prefix string, i int) string     { return fmt.Sprintf("%s-vpc-%d", prefix, i) }
func routeName(prefix string, i int) string   { return fmt.Sprintf("%s-route-%d", prefix, i) }

// compose returns a landing zone's desired children: for each account an
// account, a VPC that waits for the account and receives its account_id,
// and a route that waits for the VPC and receives its vpc_id.
func compose(spec zoneSpec) (*converge.Result, error) {
	switch {
	case !prefixPattern.MatchString(spec.Prefix):
		return nil, converge.Terminal(fmt.Errorf("spec.prefix: %q must be lower-case letters, digits and '-', starting with a letter or digit", spec.Prefix))
	case len(spec.Prefix) > maxPrefixLen:
		return nil, converge.Terminal(fmt.Errorf("spec.prefix: %d characters, more than %d", len(spec.Prefix), maxPrefixLen))
	case spec.Accounts < 1 || spec.Accounts > maxAccounts:
		return nil, converge.Terminal(fmt.Errorf("spec.accounts: %d is not between 1 and %d", spec.Accounts, maxAccounts))
	}
	cidr := spec.VPCCIDR
	if cidr == "" {
		cidr = defaultVPCCIDR
	}
	res := &converge.Result{
		Compose:  true,
		Children: make([]converge.Child, 0, 3*spec.Accounts),
		Edges:    make([]converge.Edge, 0, 2*spec.Accounts),
		Status:   zoneStatus{Accounts: spec.Accounts},
	}
	for i := range spec.Accounts {
		account := converge.Child{Kind: kindAccount, KindVersion: kindVersion, Name: accountName(spec.Prefix, i),
			Spec: accountSpec{Email: accountName(spec.Prefix, i) + "@example.com", Index: i}}
		// The ids start empty; the flows fill them in before the VPC and
		// the route first run.
		vpc := converge.Child{Kind: kindVPC, KindVersion: kindVersion, Name: vpcName(spec.Prefix, i),
			Spec: vpcSpec{CIDR: cidr, AccountID: ""}}
		route := converge.Child{Kind: kindRoute, KindVersion: kindVersion, Name: routeName(spec.Prefix, i),
			Spec: routeSpec{Destination: defaultDestination, VPCID: ""}}
		res.Children = append(res.Children, account, vpc, route)
		res.Edges = append(res.Edges,
			converge.DependsOn(vpc.Ref(), account.Ref(), converge.FlowFrom("/account_id", "/account_id")),
			converge.DependsOn(route.Ref(), vpc.Ref(), converge.FlowFrom("/vpc_id", "/vpc_id")),
		)
	}
	return res, nil
}
