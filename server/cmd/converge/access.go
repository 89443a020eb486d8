package main

import (
	"fmt"
	"net"
	"strings"

	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/authz"
)

// checkOpenAccess refuses to serve the control API beyond loopback
// without authorization: with no rule every caller may do everything, so
// a server reachable from the network must either name who may do what or
// say explicitly that anyone may (allowAnonymous). A broker-only server
// serves no control API: its workers are admitted by --allow-worker-ids.
func checkOpenAccess(listen, role string, policy *authz.Policy, allowAnonymous bool) error {
	if policy.Enabled() || allowAnonymous || role == app.RoleBroker || loopbackOnly(listen) {
		return nil
	}
	return fmt.Errorf("--listen %s reaches beyond loopback and no authorization is configured, so every caller could do everything: "+
		"name who may do what with --admin-ids, --writer-ids, --reader-ids, --team or --token-file (see docs/operations.md, Authorization), "+
		"or accept anonymous access explicitly with --allow-anonymous", listen)
}

// loopbackOnly reports whether a listen address accepts connections only
// from this machine: a loopback IP, or "localhost". An empty host is
// every interface; any other name may resolve beyond loopback.
func loopbackOnly(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
