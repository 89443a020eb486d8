package converge

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

func TestWithTLSRejectsBadFiles(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeSelfSigned(t, "w", certFile, keyFile, time.Now())
	for _, c := range []struct {
		name string
		opt  Option
		want string
	}{
		{"missing CA", WithTLS(certFile, keyFile, filepath.Join(dir, "nope.pem")), "WithTLS: CA file"},
		{"CA not PEM", WithTLS(certFile, keyFile, keyFile), "no PEM certificates"},
		{"cert without key", WithTLS(certFile, "", ""), "both certFile and keyFile"},
		{"key mismatch", WithTLS(certFile, certFile, ""), "WithTLS: certificate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := NewWorker("https://localhost:1", c.opt, WithLogger(slog.New(slog.DiscardHandler))); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("NewWorker = %v; want an error containing %q", err, c.want)
			}
		})
	}
}

// TestTLSFromEnvironment: a worker given no TLS option and no HTTP client
// takes its files from CONVERGE_TLS_*; an option wins over them.
func TestTLSFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeSelfSigned(t, "w", certFile, keyFile, time.Now())
	env := map[string]string{EnvTLSCert: certFile, EnvTLSKey: keyFile, EnvTLSCA: filepath.Join(dir, "nope.pem")}
	var c config
	tlsFromEnv(&c, func(k string) string { return env[k] })
	if c.err == nil || !strings.Contains(c.err.Error(), "TLS files from CONVERGE_TLS_CA=") || !strings.Contains(c.err.Error(), ": CA file") {
		t.Fatalf("files from the environment were not used: httpClient %v, err %v", c.httpClient, c.err)
	}
	env[EnvTLSCA] = certFile
	c = config{}
	tlsFromEnv(&c, func(k string) string { return env[k] })
	if c.err != nil || c.httpClient == nil {
		t.Fatalf("with a readable CA: httpClient %v, err %v", c.httpClient, c.err)
	}
	c = config{}
	tlsFromEnv(&c, func(string) string { return "" })
	if c.err != nil || c.httpClient != nil {
		t.Fatalf("with nothing set: httpClient %v, err %v; want the defaults", c.httpClient, c.err)
	}
}
