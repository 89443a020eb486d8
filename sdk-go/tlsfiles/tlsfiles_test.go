package tlsfiles_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/tlsfiles"
)

// writeSelfSigned writes a self-signed certificate named cn and its key
// to certFile and keyFile, with modification time mod.
func writeSelfSigned(t *testing.T, cn, certFile, keyFile string, mod time.Time) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for file, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(file, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
}

func TestKeyPairReloadsChangedFiles(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	start := time.Now().Add(-time.Minute)
	writeSelfSigned(t, "first", certFile, keyFile, start)
	kp, err := tlsfiles.NewKeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cn := func() string {
		t.Helper()
		c, err := kp.Certificate()
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return leaf.Subject.CommonName
	}
	if got := cn(); got != "first" {
		t.Fatalf("loaded %q, want first", got)
	}
	writeSelfSigned(t, "second", certFile, keyFile, start.Add(time.Second))
	if got := cn(); got != "second" {
		t.Fatalf("after rotation loaded %q, want second", got)
	}
	if err := os.WriteFile(certFile, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := cn(); got != "second" {
		t.Fatalf("after a bad file loaded %q, want the previous second", got)
	}
}
