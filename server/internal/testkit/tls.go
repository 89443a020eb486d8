package testkit

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"testing"
	"time"
)

// CA is a throwaway certificate authority. What it issues is written to
// PEM files, because what tests exercise (the server's flags, conctl and
// the SDK) take files.
type CA struct {
	t    testing.TB
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// CertFile is the CA certificate, for a trust pool.
	CertFile string
}

// CertFiles are a certificate and its private key, as PEM files.
type CertFiles struct {
	CertFile, KeyFile string
}

// NewCA makes a CA whose files live in a temporary directory of t.
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
		t.Fatalf("CA %s: %v", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("CA %s: %v", name, err)
	}
	ca := &CA{t: t, dir: t.TempDir(), cert: cert, key: key}
	ca.CertFile = ca.write(name+"-ca", "CERTIFICATE", der)
	return ca
}

// Server issues a server certificate for 127.0.0.1 and localhost, where
// tests listen, valid from an hour ago for a day.
func (ca *CA) Server(name string) CertFiles {
	ca.t.Helper()
	return ca.issue(name, &x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:    []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		NotBefore:   time.Now().Add(-time.Hour),
		NotAfter:    time.Now().Add(24 * time.Hour),
	})
}

// Client issues a client certificate whose one URI SAN is spiffeID (no
// SAN if empty), valid until notAfter (zero: a day from now). It is valid
// from two hours ago, so that a notAfter in the past makes an expired
// certificate rather than one that was never valid.
func (ca *CA) Client(name, spiffeID string, notAfter time.Time) CertFiles {
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
			ca.t.Fatalf("client %s: SPIFFE ID %q: %v", name, spiffeID, err)
		}
		tmpl.URIs = []*url.URL{u}
	}
	return ca.issue(name, tmpl)
}

func (ca *CA) issue(name string, tmpl *x509.Certificate) CertFiles {
	t := ca.t
	t.Helper()
	key := newKey(t)
	tmpl.SerialNumber = serial(t)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("certificate %s: %v", name, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("certificate %s: %v", name, err)
	}
	return CertFiles{
		CertFile: ca.write(name, "CERTIFICATE", der),
		KeyFile:  ca.write(name+"-key", "PRIVATE KEY", keyDER),
	}
}

// write stores one PEM block in a file of its own named after name; two
// certificates of one name get two files.
func (ca *CA) write(name, typ string, der []byte) string {
	ca.t.Helper()
	f, err := os.CreateTemp(ca.dir, name+"-*.pem")
	if err != nil {
		ca.t.Fatal(err)
	}
	defer f.Close()
	if err := pem.Encode(f, &pem.Block{Type: typ, Bytes: der}); err != nil {
		ca.t.Fatal(err)
	}
	return f.Name()
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// serial is random, as a CA's must be for certificates to differ.
func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// ReplaceFile copies src over dst in place, as a certificate rotation
// does, and dates dst a second later than it was: a reloader watching
// modification times sees the change even where they are coarse.
func ReplaceFile(t testing.TB, dst, src string) {
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

// Pool is a trust pool holding just the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// TLSClient is an HTTP client (HTTP/2 when the server offers it) that
// trusts roots and presents cert, or no certificate if cert is nil.
func TLSClient(t testing.TB, roots *CA, cert *CertFiles) *http.Client {
	t.Helper()
	cfg := &tls.Config{RootCAs: roots.Pool()}
	if cert != nil {
		kp, err := tls.LoadX509KeyPair(cert.CertFile, cert.KeyFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{kp}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}
}
