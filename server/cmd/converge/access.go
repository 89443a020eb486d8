package main

import (
	"fmt"
	"net"
	"strings"

	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/authz"
	"github.com/convergehq/converge/server/internal/tlsconf"
)

// checkOpenAccess refuses to serve beyond loopback with nobody checked:
// without authorization every API caller may do everything, and without
// an identity for workers any process may connect as one and be sent
// specs and provider configs. A server reachable from the network must
// either name who may do what or say explicitly that anyone may
// (allowAnonymous). A broker-only server serves no control API: client
// certificates that every worker must present identify its workers too.
func checkOpenAccess(listen, role string, policy *authz.Policy, tls tlsconf.Config, allowAnonymous bool) error {
	if policy.Enabled() || allowAnonymous || loopbackOnly(listen) {
		return nil
	}
	if role == app.RoleBroker {
		if tls.ClientCAFile != "" && tls.ClientAuth != tlsconf.ClientAuthRequest {
			return nil
		}
		return fmt.Errorf("--listen %s reaches beyond loopback and workers are not identified, so any process could connect as a worker "+
			"and be sent specs and provider configs: give workers bearer tokens with --token-file, or require client certificates "+
			"with --tls-client-ca (see docs/operations.md, Authorization), or accept anonymous workers explicitly with --allow-anonymous", listen)
	}
	return fmt.Errorf("--listen %s reaches beyond loopback and no authorization is configured, so every caller could do everything: "+
		"name who may do what with --admin-ids, --writer-ids, --reader-ids, --team, --grant or --token-file (see docs/operations.md, Authorization), "+
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
