// Package transport builds the HTTP client stdworker dials the server with:
// HTTP/2 (the worker stream is bidirectional), over TLS with the CA and
// client certificate the flags name.
package transport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/convergehq/converge/sdk-go/tlsfiles"
)

// TLSFiles are the PEM files given by --tls-ca, --tls-cert and --tls-key.
type TLSFiles struct {
	// CA verifies the server instead of the system's roots.
	CA string
	// Cert and Key are the client certificate and its key, for servers
	// that authenticate workers by certificate. Both or neither.
	Cert, Key string
}

// Empty reports whether no TLS file was given.
func (f TLSFiles) Empty() bool { return f.CA == "" && f.Cert == "" && f.Key == "" }

// Client returns the HTTP client for serverURL, or nil when no TLS file was
// given and the defaults (the SDK's HTTP/2 client, system roots for https)
// will do.
func Client(serverURL string, files TLSFiles) (*http.Client, error) {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--server: %q is not an http:// or https:// URL", serverURL)
	}
	if files.Empty() {
		return nil, nil
	}
	if u.Scheme != "https" {
		return nil, fmt.Errorf("--tls-ca, --tls-cert and --tls-key need an https:// server, not %q", serverURL)
	}
	cfg, err := tlsConfig(files)
	if err != nil {
		return nil, err
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = cfg
	var p http.Protocols
	p.SetHTTP2(true)
	t.Protocols = &p
	return &http.Client{Transport: t}, nil
}

func tlsConfig(files TLSFiles) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if files.CA != "" {
		pool, err := tlsfiles.CertPool(files.CA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		cfg.RootCAs = pool
	}
	switch {
	case files.Cert != "" && files.Key != "":
		kp, err := tlsfiles.NewKeyPair(files.Cert, files.Key)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cert, err := kp.Certificate()
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{*cert}
	case files.Cert != "" || files.Key != "":
		return nil, errors.New("--tls-cert and --tls-key go together: give both or neither")
	}
	return cfg, nil
}
