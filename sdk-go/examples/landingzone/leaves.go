package main

import (
	"errors"

	"github.com/convergehq/converge/sdk-go/converge"
)

// errNoAccountID and errNoVPCID are what a leaf reports when the value its
// edge flows in is missing: a terminal failure, because only a new spec
// (the flow arriving) can fix it.
var (
	errNoAccountID = errors.New("account_id is empty: the flow from the account did not arrive")
	errNoVPCID     = errors.New("vpc_id is empty: the flow from the VPC did not arrive")
)

// accountSpec is the spec of kind account v1.
type accountSpec struct {
	Email string `json:"email"`
	Index int    `json:"index"`
}

// accountStatus is the status of kind account v1.
type accountStatus struct {
	AccountID string `json:"account_id"`
}

// vpcSpec is the spec of kind vpc v1; AccountID flows in from the account.
type vpcSpec struct {
	CIDR      string `json:"cidr"`
	AccountID string `json:"account_id"`
}

// vpcStatus is the status of kind vpc v1.
type vpcStatus struct {
	VPCID     string `json:"vpc_id"`
	AccountID string `json:"account_id"`
}

// routeSpec is the spec of kind route v1; VPCID flows in from the VPC.
type routeSpec struct {
	Destination string `json:"destination"`
	VPCID       string `json:"vpc_id"`
}

// routeStatus is the status of kind route v1.
type routeStatus struct {
	RouteID string `json:"route_id"`
}

func reconcileAccount(t *converge.Task) (any, error) {
	var spec accountSpec
	if err := t.DecodeSpec(&spec); err != nil {
		return nil, converge.Terminal(err)
	}
	return accountStatus{AccountID: cloudID("acct", t.Name)}, nil
}

func reconcileVPC(t *converge.Task) (any, error) {
	var spec vpcSpec
	if err := t.DecodeSpec(&spec); err != nil {
		return nil, converge.Terminal(err)
	}
	if spec.AccountID == "" {
		return nil, converge.Terminal(errNoAccountID)
	}
	return vpcStatus{VPCID: cloudID("vpc", t.Name), AccountID: spec.AccountID}, nil
}

func reconcileRoute(t *converge.Task) (any, error) {
	var spec routeSpec
	if err := t.DecodeSpec(&spec); err != nil {
		return nil, converge.Terminal(err)
	}
	if spec.VPCID == "" {
		return nil, converge.Terminal(errNoVPCID)
	}
	return routeStatus{RouteID: cloudID("route", t.Name)}, nil
}
