package testkit

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"
)

const spiffeID = "spiffe://td/ns/ops/alice"

func parseCert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("%s: no PEM certificate", file)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pool is a trust pool of the CA as its file has it, which is what the
// code under test loads.
func pool(t *testing.T, ca *CA) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	p.AddCert(parseCert(t, ca.CertFile))
	return p
}

func TestServerCertificateVerifies(t *testing.T) {
	ca := NewCA(t, "ca")
	srv := ca.Server("server")
	if _, err := tls.LoadX509KeyPair(srv.CertFile, srv.KeyFile); err != nil {
		t.Fatalf("key pair: %v", err)
	}
	c := parseCert(t, srv.CertFile)
	for _, host := range []string{"localhost", "127.0.0.1"} {
		opts := x509.VerifyOptions{Roots: pool(t, ca), DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
		if _, err := c.Verify(opts); err != nil {
			t.Errorf("server certificate for %s: %v", host, err)
		}
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: pool(t, NewCA(t, "other"))}); err == nil {
		t.Error("the server certificate verifies against another CA")
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "localhost"}); err != nil {
		t.Errorf("against the CA's Pool: %v", err)
	}
}

func TestClientCertificateCarriesItsSPIFFEID(t *testing.T) {
	ca := NewCA(t, "ca")
	usage := x509.VerifyOptions{Roots: pool(t, ca), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}

	c := parseCert(t, ca.Client("ops", spiffeID, time.Time{}).CertFile)
	if _, err := c.Verify(usage); err != nil {
		t.Fatalf("client certificate: %v", err)
	}
	if len(c.URIs) != 1 || c.URIs[0].String() != spiffeID {
		t.Errorf("URI SANs = %v, want just %s", c.URIs, spiffeID)
	}
	if anon := parseCert(t, ca.Client("anon", "", time.Time{}).CertFile); len(anon.URIs) != 0 {
		t.Errorf("a client without a SPIFFE ID has URI SANs %v", anon.URIs)
	}

	expired := parseCert(t, ca.Client("old", spiffeID, time.Now().Add(-time.Minute)).CertFile)
	var invalid x509.CertificateInvalidError
	if _, err := expired.Verify(usage); !errors.As(err, &invalid) || invalid.Reason != x509.Expired {
		t.Errorf("expired client certificate: err = %v, want it expired", err)
	}
}

// TestTwoCertificatesOfOneName get files of their own.
func TestTwoCertificatesOfOneName(t *testing.T) {
	ca := NewCA(t, "ca")
	a, b := ca.Server("same"), ca.Server("same")
	if a.CertFile == b.CertFile || a.KeyFile == b.KeyFile {
		t.Fatalf("two certificates share files: %+v and %+v", a, b)
	}
}

// TestTLSClientDoesMutualTLS: a server requiring a client certificate of
// the CA admits the kit's client over HTTP/2 and sees its SPIFFE ID.
func TestTLSClientDoesMutualTLS(t *testing.T) {
	ca := NewCA(t, "ca")
	srv := ca.Server("server")
	kp, err := tls.LoadX509KeyPair(srv.CertFile, srv.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.TLS.PeerCertificates[0].URIs[0].String())
	}))
	ts.EnableHTTP2 = true
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{kp}, ClientCAs: pool(t, ca), ClientAuth: tls.RequireAndVerifyClientCert}
	ts.StartTLS()
	t.Cleanup(ts.Close)

	ops := ca.Client("ops", spiffeID, time.Time{})
	resp, err := TLSClient(t, ca, &ops).Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if string(body) != spiffeID || resp.ProtoMajor != 2 {
		t.Errorf("server saw %q over HTTP/%d, want %s over HTTP/2", body, resp.ProtoMajor, spiffeID)
	}
	if _, err := TLSClient(t, ca, nil).Get(ts.URL); err == nil {
		t.Error("a client without a certificate was admitted")
	}
}

func TestReplaceFile(t *testing.T) {
	ca := NewCA(t, "ca")
	first, second := ca.Server("first"), ca.Server("second")
	before, err := os.Stat(first.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	ReplaceFile(t, first.CertFile, second.CertFile)
	got, _ := os.ReadFile(first.CertFile)
	want, _ := os.ReadFile(second.CertFile)
	if !bytes.Equal(got, want) {
		t.Error("the file was not replaced")
	}
	after, err := os.Stat(first.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	if want := before.ModTime().Add(time.Second); !after.ModTime().Equal(want) {
		t.Errorf("modified %s, want a second after %s", after.ModTime(), before.ModTime())
	}
}
