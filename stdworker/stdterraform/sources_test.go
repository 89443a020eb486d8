package stdterraform

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convergehq/converge/sdk-go/converge"
)

// moduleFiles is a small module with one output, for the remote sources.
var moduleFiles = map[string]string{
	"main.tf": `variable "n" {
  type    = number
  default = 1
}

resource "terraform_data" "n" {
  input = var.n
}

output "n" {
  value = terraform_data.n.output
}
`,
}

func TestGitSource(t *testing.T) {
	bin := terraformBinary(t)
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not on PATH; skipping the git module source test")
	}
	repo := t.TempDir()
	for name, content := range moduleFiles {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "."},
		{"-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "module"},
	} {
		cmd := exec.Command(git, args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	h := newTestHandler(t, config{Binary: bin})
	res, err := h.apply(testCtx(t), task(t, "git", map[string]any{"source": "git::file://" + repo + "?ref=main", "variables": map[string]any{"n": 7}}, nil))
	if err != nil {
		t.Fatalf("apply from git: %v", err)
	}
	if got := outputs(t, res)["n"]; got != float64(7) {
		t.Errorf("output n = %v, want 7", got)
	}
}

func TestHTTPSArchiveSource(t *testing.T) {
	bin := terraformBinary(t)
	archive := tarGz(t, moduleFiles)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/modules/n.tar.gz" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/gzip")
		_, _ = w.Write(archive)
	}))
	defer srv.Close()
	// terraform trusts the test server's certificate through SSL_CERT_FILE,
	// passed as config.env like any other environment a module needs.
	ca := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(ca, pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	h := newTestHandler(t, config{Binary: bin})
	cfg := map[string]any{"env": map[string]any{"SSL_CERT_FILE": ca}}
	res, err := h.apply(testCtx(t), task(t, "tgz", map[string]any{"source": srv.URL + "/modules/n.tar.gz", "variables": map[string]any{"n": 3}}, cfg))
	if err != nil {
		t.Fatalf("apply from an https archive: %v", err)
	}
	if got := outputs(t, res)["n"]; got != float64(3) {
		t.Errorf("output n = %v, want 3", got)
	}

	// A missing archive is the world's fault, not the spec's: transient.
	_, err = h.apply(testCtx(t), task(t, "tgz404", map[string]any{"source": srv.URL + "/modules/missing.tar.gz"}, cfg))
	if err == nil || converge.IsTerminal(err) || !strings.Contains(err.Error(), "404") {
		t.Fatalf("apply from a missing archive: err = %v, want a transient error naming the 404", err)
	}
}

// tarGz returns a gzipped tar of files.
func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, content := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
