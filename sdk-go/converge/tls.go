package converge

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"
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
			pem, err := os.ReadFile(caFile)
			if err != nil {
				c.fail("WithTLS: CA file: %v", err)
				return
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				c.fail("WithTLS: CA file %s: no PEM certificates found", caFile)
				return
			}
			cfg.RootCAs = pool
		}
		if (certFile == "") != (keyFile == "") {
			c.fail("WithTLS: give both certFile and keyFile, or neither")
			return
		}
		if certFile != "" {
			kp := &keyPair{certFile: certFile, keyFile: keyFile}
			if _, err := kp.get(); err != nil {
				c.fail("WithTLS: %v", err)
				return
			}
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return kp.get() }
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

// tlsFromEnv applies WithTLS with the files the environment names, if any.
func tlsFromEnv(c *config, getenv func(string) string) {
	ca, cert, key := getenv(EnvTLSCA), getenv(EnvTLSCert), getenv(EnvTLSKey)
	if ca != "" || cert != "" || key != "" {
		WithTLS(cert, key, ca).apply(c)
	}
}

// keyPair is a certificate and key loaded from files and loaded again
// when either file's modification time or size changes. A pair that fails
// to load keeps the previous one in use.
type keyPair struct {
	certFile, keyFile string

	mu     sync.Mutex
	stamp  [2]fileStamp
	cert   *tls.Certificate
	loaded bool
}

type fileStamp struct {
	mod  time.Time
	size int64
}

func (a fileStamp) same(b fileStamp) bool { return a.mod.Equal(b.mod) && a.size == b.size }

func statFile(name string) fileStamp {
	info, err := os.Stat(name)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{info.ModTime(), info.Size()}
}

func (k *keyPair) get() (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	stamp := [2]fileStamp{statFile(k.certFile), statFile(k.keyFile)}
	if k.loaded && stamp[0].same(k.stamp[0]) && stamp[1].same(k.stamp[1]) {
		return k.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
	if err != nil {
		if k.cert != nil {
			return k.cert, nil
		}
		return nil, fmt.Errorf("certificate %s / key %s: %w", k.certFile, k.keyFile, err)
	}
	k.cert, k.stamp, k.loaded = &cert, stamp, true
	return k.cert, nil
}
