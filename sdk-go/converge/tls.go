package converge

import (
	"crypto/tls"
	"net/http"
	"strings"

	"github.com/convergehq/converge/sdk-go/tlsfiles"
)

// WithTLS makes the worker dial an https:// server with a client
// certificate (mutual TLS, e.g. an X.509 SVID carrying the worker's SPIFFE
// ID) and trust the CAs in caFile. certFile and keyFile are PEM files; they
// are re-read when they change, so short-lived certificates rotate without
// a restart. An empty caFile trusts the system's CAs; empty certFile and
// keyFile send no client certificate. It replaces any [WithHTTPClient].
// A worker given neither takes the files from CONVERGE_TLS_CA,
// CONVERGE_TLS_CERT and CONVERGE_TLS_KEY when they are set.
func WithTLS(certFile, keyFile, caFile string) Option {
	return optionFunc(func(c *config) {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if caFile != "" {
			pool, err := tlsfiles.CertPool(caFile)
			if err != nil {
				c.fail("WithTLS: CA file: %v", err)
				return
			}
			cfg.RootCAs = pool
		}
		if (certFile == "") != (keyFile == "") {
			c.fail("WithTLS: give both certFile and keyFile, or neither")
			return
		}
		if certFile != "" {
			kp, err := tlsfiles.NewKeyPair(certFile, keyFile)
			if err != nil {
				c.fail("WithTLS: %v", err)
				return
			}
			cfg.GetClientCertificate = kp.GetClientCertificate
		}
		client := newHTTPClient()
		if t, ok := client.Transport.(*http.Transport); ok {
			t.TLSClientConfig = cfg
		}
		c.httpClient = client
	})
}

// Environment variables a worker without [WithTLS] or [WithHTTPClient]
// takes its TLS files from, the same conctl and stdworker read.
const (
	EnvTLSCA   = "CONVERGE_TLS_CA"
	EnvTLSCert = "CONVERGE_TLS_CERT"
	EnvTLSKey  = "CONVERGE_TLS_KEY"
)

// tlsFromEnv applies WithTLS with the files the environment names, if any;
// an error names the variables.
func tlsFromEnv(c *config, getenv func(string) string) {
	ca, cert, key := getenv(EnvTLSCA), getenv(EnvTLSCert), getenv(EnvTLSKey)
	if ca == "" && cert == "" && key == "" {
		return
	}
	var tc config
	WithTLS(cert, key, ca).apply(&tc)
	if tc.err != nil {
		c.fail("TLS files from %s=%q %s=%q %s=%q: %s", EnvTLSCA, ca, EnvTLSCert, cert, EnvTLSKey, key,
			strings.TrimPrefix(tc.err.Error(), "converge: WithTLS: "))
		return
	}
	c.httpClient = tc.httpClient
}
