package transport

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNoFilesMeansDefaults(t *testing.T) {
	for _, u := range []string{"http://localhost:7070", "https://converge.example.com"} {
		if c, err := Client(u, TLSFiles{}); c != nil || err != nil {
			t.Errorf("Client(%s) = %v, %v; want the defaults", u, c, err)
		}
	}
	if _, err := Client("localhost:7070", TLSFiles{}); err == nil || !strings.Contains(err.Error(), "--server") {
		t.Errorf("a URL without scheme: %v", err)
	}
}

func TestTLSFiles(t *testing.T) {
	dir := t.TempDir()
	cert, key := writePair(t, dir)
	if _, err := Client("http://x:1", TLSFiles{CA: cert}); err == nil || !strings.Contains(err.Error(), "need an https:// server") {
		t.Errorf("TLS over http: %v", err)
	}
	if _, err := Client("https://x:1", TLSFiles{Cert: cert}); err == nil || !strings.Contains(err.Error(), "go together") {
		t.Errorf("cert without key: %v", err)
	}
	if _, err := Client("https://x:1", TLSFiles{CA: key}); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("a key as CA: %v", err)
	}
	c, err := Client("https://x:1", TLSFiles{CA: cert, Cert: cert, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	tr := c.Transport.(*http.Transport)
	if tr.TLSClientConfig.RootCAs == nil || len(tr.TLSClientConfig.Certificates) != 1 || !tr.Protocols.HTTP2() || tr.Protocols.HTTP1() {
		t.Errorf("transport: want the CA, the client certificate and HTTP/2 only")
	}
}

func writePair(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
