package tlsconf_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/testkit"
	"github.com/convergehq/converge/server/internal/tlsconf"
)

func TestAllowlist(t *testing.T) {
	al, err := tlsconf.ParseAllowlist("--allow-api-ids", []string{"spiffe://td/ns/a", " spiffe://td/ns/prod/* "})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{
		"spiffe://td/ns/a":          true,
		"spiffe://td/ns/a/b":        false,
		"spiffe://td/ns/prod/x":     true,
		"spiffe://td/ns/prod/x/y":   true,
		"spiffe://td/ns/prod":       false,
		"spiffe://td/ns/production": false,
		"":                          false,
	} {
		if got := al.Allows(id); got != want {
			t.Errorf("Allows(%q) = %v, want %v", id, got, want)
		}
	}
	if !(tlsconf.Allowlist{}).Allows("") {
		t.Error("an empty allowlist must admit everyone")
	}
	for _, bad := range []string{"https://td/x", "spiffe:///x", "spiffe://td:8/x", "spiffe://td/x?q=1", "spiffe://td/x/"} {
		_, err := tlsconf.ParseAllowlist("--allow-worker-ids", []string{bad})
		if err == nil || !strings.Contains(err.Error(), "--allow-worker-ids") || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseAllowlist(%q) = %v, want an error naming the flag and the entry", bad, err)
		}
	}
}

func TestNewChecksConfig(t *testing.T) {
	ca := testkit.NewCA(t, "ca")
	srv := ca.Server("server")
	for _, tc := range []struct {
		cfg  tlsconf.Config
		want string
	}{
		{tlsconf.Config{CertFile: srv.CertFile}, "--tls-key"},
		{tlsconf.Config{CertFile: srv.CertFile, KeyFile: srv.KeyFile, ClientCAFile: ca.CertFile, ClientAuth: "maybe"}, "--tls-client-auth"},
		{tlsconf.Config{CertFile: srv.CertFile, KeyFile: srv.KeyFile, AllowAPIIDs: []string{"spiffe://td/x"}}, "--tls-client-ca"},
		{tlsconf.Config{CertFile: srv.CertFile, KeyFile: ca.CertFile}, "--tls-key"},
		{tlsconf.Config{CertFile: srv.CertFile, KeyFile: srv.KeyFile, ClientCAFile: srv.KeyFile}, "--tls-client-ca"},
	} {
		if _, err := tlsconf.New(tc.cfg, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
}

// serve runs a TLS server with s's configuration whose handler is guarded
// for the API audience and echoes the caller's SPIFFE ID.
func serve(t *testing.T, s *tlsconf.Server) string {
	t.Helper()
	h := tlsconf.Guard(tlsconf.AudienceAPI, s.API, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := tlsconf.PeerFrom(r.Context())
		if !ok {
			http.Error(w, "no peer", http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "id="+p.ID)
	}))
	ts := httptest.NewUnstartedServer(h)
	ts.TLS = s.TLSConfig()
	ts.StartTLS()
	t.Cleanup(ts.Close)
	return ts.URL
}

func get(c *http.Client, url string) (int, string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), nil
}

func TestGuardAdmitsAndRefuses(t *testing.T) {
	ca := testkit.NewCA(t, "ca")
	srv := ca.Server("server")
	s, err := tlsconf.New(tlsconf.Config{CertFile: srv.CertFile, KeyFile: srv.KeyFile, ClientCAFile: ca.CertFile,
		ClientAuth: tlsconf.ClientAuthRequest, AllowAPIIDs: []string{"spiffe://td/ns/ops/*"}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, s)

	ok := ca.Client("ok", "spiffe://td/ns/ops/alice", time.Time{})
	code, body, err := get(testkit.TLSClient(t, ca, &ok), url)
	if err != nil || code != http.StatusOK || body != "id=spiffe://td/ns/ops/alice" {
		t.Fatalf("allowed caller: %d %q %v", code, body, err)
	}
	other := ca.Client("other", "spiffe://td/ns/dev/bob", time.Time{})
	code, body, err = get(testkit.TLSClient(t, ca, &other), url)
	if err != nil || code != http.StatusForbidden || !strings.Contains(body, `\"spiffe://td/ns/dev/bob\"`) || !strings.Contains(body, "api audience") {
		t.Fatalf("refused caller: %d %q %v", code, body, err)
	}
	// Under "request", a caller without a certificate gets through the
	// handshake and is refused by the allowlist.
	code, body, err = get(testkit.TLSClient(t, ca, nil), url)
	if err != nil || code != http.StatusForbidden || !strings.Contains(body, "without a SPIFFE ID") {
		t.Fatalf("caller without certificate: %d %q %v", code, body, err)
	}
}

func TestReloadsChangedFiles(t *testing.T) {
	ca := testkit.NewCA(t, "ca")
	first := ca.Server("first")
	second := ca.Server("second")
	s, err := tlsconf.New(tlsconf.Config{CertFile: first.CertFile, KeyFile: first.KeyFile, CheckInterval: -1}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", s.TLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _ = c.(*tls.Conn).Handshake(); c.Close() }()
		}
	}()
	servedCN := func() string {
		t.Helper()
		pool := ca.Pool()
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := servedCN(); cn != "first" {
		t.Fatalf("served %q, want first", cn)
	}
	testkit.ReplaceFile(t, first.CertFile, second.CertFile)
	testkit.ReplaceFile(t, first.KeyFile, second.KeyFile)
	if cn := servedCN(); cn != "second" {
		t.Fatalf("after rotation served %q, want second", cn)
	}
	// A broken file keeps the previous certificate.
	if err := os.WriteFile(first.CertFile, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cn := servedCN(); cn != "second" {
		t.Fatalf("after a bad file served %q, want second", cn)
	}
}

func TestSPIFFEID(t *testing.T) {
	ca := testkit.NewCA(t, "ca")
	for _, tc := range []struct{ uri, want string }{
		{"spiffe://td/w", "spiffe://td/w"},
		{"https://td/w", ""},
		{"", ""},
	} {
		f := ca.Client("c", tc.uri, time.Time{})
		kp, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := x509.ParseCertificate(kp.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		if got := tlsconf.SPIFFEID(cert); got != tc.want {
			t.Errorf("SPIFFEID(%q) = %q, want %q", tc.uri, got, tc.want)
		}
	}
	if tlsconf.SPIFFEID(nil) != "" {
		t.Error("SPIFFEID(nil) must be empty")
	}
}
