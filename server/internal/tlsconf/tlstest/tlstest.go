// Package tlstest makes throwaway certificates for tests: a CA, server
// certificates for 127.0.0.1 and client certificates with SPIFFE IDs.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority that signs test certificates.
type CA struct {
	t    testing.TB
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// CertFile is the CA certificate as a PEM file.
	CertFile string
}

// Files are a certificate and its key as PEM files.
type Files struct {
	CertFile, KeyFile string
}

// NewCA makes a CA named name, writing its certificate under t.TempDir().
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{t: t, cert: cert, key: key}
	ca.CertFile = writePEM(t, name+"-ca.pem", "CERTIFICATE", der)
	return ca
}

// Server issues a server certificate for 127.0.0.1 and localhost.
func (ca *CA) Server(name string) Files {
	return ca.issue(name, &x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:    []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		NotBefore:   time.Now().Add(-time.Hour),
		NotAfter:    time.Now().Add(24 * time.Hour),
	})
}

// Client issues a client certificate whose URI SAN is spiffeID (none if
// empty), valid until notAfter (zero: a day from now).
func (ca *CA) Client(name, spiffeID string, notAfter time.Time) Files {
	ca.t.Helper()
	if notAfter.IsZero() {
		notAfter = time.Now().Add(24 * time.Hour)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		NotBefore:   time.Now().Add(-2 * time.Hour),
		NotAfter:    notAfter,
	}
	if spiffeID != "" {
		u, err := url.Parse(spiffeID)
		if err != nil {
			ca.t.Fatal(err)
		}
		tmpl.URIs = []*url.URL{u}
	}
	return ca.issue(name, tmpl)
}

func (ca *CA) issue(name string, tmpl *x509.Certificate) Files {
	t := ca.t
	t.Helper()
	key := newKey(t)
	tmpl.SerialNumber = serial(t)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return Files{
		CertFile: writePEM(t, name+".pem", "CERTIFICATE", der),
		KeyFile:  writePEM(t, name+"-key.pem", "PRIVATE KEY", keyDER),
	}
}

// Replace copies src over dst in place (as a rotation does), with an
// mtime a second later than dst's so that a change is seen even on file
// systems with coarse timestamps.
func Replace(t testing.TB, dst, src string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
	later := info.ModTime().Add(time.Second)
	if err := os.Chtimes(dst, later, later); err != nil {
		t.Fatal(err)
	}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func writePEM(t testing.TB, name, typ string, der []byte) string {
	f, err := os.CreateTemp(t.TempDir(), "*-"+filepath.Base(name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pem.Encode(f, &pem.Block{Type: typ, Bytes: der}); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}
