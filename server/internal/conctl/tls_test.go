package conctl_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/conctl"
	"github.com/convergehq/converge/server/internal/testkit"
	"github.com/convergehq/converge/server/internal/tlsconf"
)

func TestTLSFlagErrors(t *testing.T) {
	_, url := newFake(t)
	ca := testkit.NewCA(t, "ca")
	cl := ca.Client("ops", "spiffe://td/ops", time.Time{})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "kinds", "--tls-ca", ca.CertFile}, "error: --tls-ca, --tls-cert, --tls-key: --server " + url + " must be an https:// URL\n"},
		{[]string{"list", "kinds", "--server", "https://127.0.0.1:1", "--tls-cert", cl.CertFile}, "error: --tls-cert and --tls-key: give both or neither\n"},
		{[]string{"list", "kinds", "--server", "https://127.0.0.1:1", "--tls-ca", cl.KeyFile}, "no PEM certificates found"},
		{[]string{"list", "kinds", "--server", "https://127.0.0.1:1", "--tls-cert", cl.CertFile, "--tls-key", ca.CertFile}, "error: --tls-cert " + cl.CertFile + " / --tls-key " + ca.CertFile + ": "},
	} {
		t.Run(strings.Join(tc.args[2:], " "), func(t *testing.T) {
			r := run(testContext(t), url, "", tc.args...)
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant it to contain:\n%s", r.code, r.stderr, tc.want)
			}
		})
	}
}

func TestTLSHints(t *testing.T) {
	ca := testkit.NewCA(t, "ca")
	srv := ca.Server("server")
	server, err := tlsconf.New(tlsconf.Config{CertFile: srv.CertFile, KeyFile: srv.KeyFile, ClientCAFile: ca.CertFile},
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(http.NotFoundHandler())
	ts.TLS = server.TLSConfig()
	ts.Config.ErrorLog = slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)
	ts.StartTLS()
	defer ts.Close()
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "The server's certificate did not verify: pass its CA with --tls-ca or CONVERGE_TLS_CA.\n"},
		{map[string]string{"CONVERGE_TLS_CA": ca.CertFile}, "If the server requires client certificates (mutual TLS), set --tls-cert and --tls-key (or CONVERGE_TLS_CERT and CONVERGE_TLS_KEY).\n"},
	} {
		tc.env["CONVERGE_SERVER"] = ts.URL
		var out, errOut bytes.Buffer
		code := conctl.Run(context.Background(), []string{"list", "kinds"}, conctl.WithStdio(strings.NewReader(""), &out, &errOut),
			conctl.WithGetenv(func(k string) string { return tc.env[k] }))
		if code != 1 || !strings.HasSuffix(errOut.String(), tc.want) {
			t.Errorf("exit %d, stderr:\n%s\nwant it to end with:\n%s", code, errOut.String(), tc.want)
		}
	}
	// Nothing listening: no certificate would help, so no hint about one.
	ts.Close()
	var out, errOut bytes.Buffer
	env := map[string]string{"CONVERGE_SERVER": ts.URL, "CONVERGE_TLS_CA": ca.CertFile}
	conctl.Run(context.Background(), []string{"list", "kinds"}, conctl.WithStdio(strings.NewReader(""), &out, &errOut),
		conctl.WithGetenv(func(k string) string { return env[k] }))
	if strings.Contains(errOut.String(), "--tls-cert") {
		t.Errorf("a server that is not there got the client-certificate hint:\n%s", errOut.String())
	}
}
