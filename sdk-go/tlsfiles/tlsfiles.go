// Package tlsfiles loads the TLS material Converge's clients (workers,
// conctl, stdworker) read from PEM files: CA bundles to verify a server
// with, and client certificates that are read again when their files
// change, so short-lived certificates (SPIFFE X.509 SVIDs) rotate under a
// running process.
package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"time"
)

// CertPool reads a PEM file of CA certificates.
func CertPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificates found", file)
	}
	return pool, nil
}

// KeyPair is a certificate and its key loaded from files, and loaded again
// when either file's modification time or size changes. A pair that fails
// to load keeps the previous one in use.
type KeyPair struct {
	certFile, keyFile string

	mu     sync.Mutex
	stamp  [2]fileStamp
	cert   *tls.Certificate
	loaded bool
}

// NewKeyPair loads certFile and keyFile, and returns an error naming them
// if they do not make a pair.
func NewKeyPair(certFile, keyFile string) (*KeyPair, error) {
	k := &KeyPair{certFile: certFile, keyFile: keyFile}
	if _, err := k.Certificate(); err != nil {
		return nil, err
	}
	return k, nil
}

// GetClientCertificate serves as tls.Config.GetClientCertificate.
func (k *KeyPair) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return k.Certificate()
}

// Certificate returns the current pair, reading the files again if they
// changed since the last read.
func (k *KeyPair) Certificate() (*tls.Certificate, error) {
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
