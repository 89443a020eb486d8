package conctl

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/sdk-go/tlsfiles"
)

// Environment variables that stand in for the TLS flags.
const (
	tlsCAEnv   = "CONVERGE_TLS_CA"
	tlsCertEnv = "CONVERGE_TLS_CERT"
	tlsKeyEnv  = "CONVERGE_TLS_KEY"
)

// tlsFlags are the client-side TLS settings.
type tlsFlags struct {
	ca, cert, key string
}

// fromEnv fills each flag not given on the command line from its
// environment variable.
func (f *tlsFlags) fromEnv(changed func(string) bool, getenv func(string) string) {
	for _, v := range []struct {
		flag, env string
		dst       *string
	}{{"tls-ca", tlsCAEnv, &f.ca}, {"tls-cert", tlsCertEnv, &f.cert}, {"tls-key", tlsKeyEnv, &f.key}} {
		if !changed(v.flag) {
			if env := getenv(v.env); env != "" {
				*v.dst = env
			}
		}
	}
}

// httpClient builds an HTTPS client from the flags, or returns nil when
// none is set (the default client then serves both http and https).
func (f tlsFlags) httpClient(server *url.URL) (*http.Client, error) {
	if f.ca == "" && f.cert == "" && f.key == "" {
		return nil, nil
	}
	if server.Scheme != "https" {
		return nil, fmt.Errorf("--tls-ca, --tls-cert, --tls-key: --server %s must be an https:// URL", server)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.ca != "" {
		pool, err := tlsfiles.CertPool(f.ca)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		cfg.RootCAs = pool
	}
	if (f.cert == "") != (f.key == "") {
		return nil, errors.New("--tls-cert and --tls-key: give both or neither")
	}
	if f.cert != "" {
		kp, err := tlsfiles.NewKeyPair(f.cert, f.key)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert %s / --tls-key %s: %w", f.cert, f.key, errors.Unwrap(err))
		}
		cfg.GetClientCertificate = kp.GetClientCertificate
	}
	t := &http.Transport{}
	if d, ok := http.DefaultTransport.(*http.Transport); ok {
		t = d.Clone()
	}
	t.TLSClientConfig = cfg
	t.ForceAttemptHTTP2 = true
	return &http.Client{Transport: t}, nil
}

// tlsHint suggests the TLS flags when a call to an https:// server failed
// in a way a missing CA or client certificate explains, or returns "".
func tlsHint(a *app, err error) string {
	if connect.IsWireError(err) || !strings.HasPrefix(a.server, "https://") {
		return ""
	}
	var unknownCA x509.UnknownAuthorityError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.As(err, &unknownCA) || errors.As(err, &verify):
		return "The server's certificate did not verify: pass its CA with --tls-ca or " + tlsCAEnv + "."
	case a.tls.cert == "" && !dialFailed(err):
		// A server that requires a client certificate ends the handshake;
		// the client sees a reset, a broken pipe or an EOF, whichever comes
		// first, never a reason.
		return "If the server requires client certificates (mutual TLS), set --tls-cert and --tls-key (or " +
			tlsCertEnv + " and " + tlsKeyEnv + ")."
	}
	return ""
}

// dialFailed reports whether err is a failure to connect at all (nothing
// listens), which no certificate would fix.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
