package ui

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

func get(t *testing.T, method, target string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec.Result()
}

func TestHandlerServesFilesAndRoutes(t *testing.T) {
	for _, c := range []struct {
		target, contentType, contains string
	}{
		{"/", "text/html", `<script type="module" src="/app.js">`},
		{"/resources/default/vpc/a", "text/html", `<main id="main">`},
		{"/kinds/vpc/1", "text/html", `<main id="main">`},
		{"/app.js", "javascript", "loadIdentity"},
		{"/pages/resource.js", "javascript", "resourcePage"},
		{"/style.css", "text/css", "svg.graph"},
		{"/cluster", "text/html", `<main id="main">`},
	} {
		res := get(t, http.MethodGet, c.target)
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK || !strings.Contains(res.Header.Get("Content-Type"), c.contentType) || !strings.Contains(string(body), c.contains) {
			t.Errorf("GET %s: %d %q, body %.80q; want 200 %s containing %q", c.target, res.StatusCode, res.Header.Get("Content-Type"), body, c.contentType, c.contains)
		}
		if !strings.Contains(res.Header.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("GET %s: no content security policy", c.target)
		}
	}
	for _, target := range []string{"/metrics", "/../../ui.go", "/nosuch.js", "/api"} {
		if res := get(t, http.MethodGet, target); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", target, res.StatusCode)
		}
	}
	if res := get(t, http.MethodHead, "/"); res.StatusCode != http.StatusOK {
		t.Errorf("HEAD /: %d", res.StatusCode)
	}
	res := get(t, http.MethodPost, "/")
	if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /: %d, Allow %q; want 405 with Allow: GET, HEAD", res.StatusCode, res.Header.Get("Allow"))
	}
}

var (
	importRe = regexp.MustCompile(`(?m)(?:^import .*? from|^export .*? from|import\() *'([^']+)'`)
	assetRe  = regexp.MustCompile(`(?:<script[^>]* src|<link[^>]* href)="(/[^"]+)"`)
)

// TestEveryReferenceIsEmbedded: with no build step, a module imported but
// not in static/ would only fail in a browser; catch it here.
func TestEveryReferenceIsEmbedded(t *testing.T) {
	index, err := fs.ReadFile(static, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	assets := assetRe.FindAllStringSubmatch(string(index), -1)
	if len(assets) < 2 {
		t.Fatalf("index.html: found %d script and stylesheet references, want app.js and style.css", len(assets))
	}
	for _, m := range assets {
		if !isFile(strings.TrimPrefix(m[1], "/")) {
			t.Errorf("index.html: %s is not embedded", m[1])
		}
	}
	n := 0
	err = fs.WalkDir(static, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(name) != ".js" {
			return err
		}
		src, err := fs.ReadFile(static, name)
		if err != nil {
			return err
		}
		for _, m := range importRe.FindAllStringSubmatch(string(src), -1) {
			n++
			if !strings.HasPrefix(m[1], "./") && !strings.HasPrefix(m[1], "../") {
				t.Errorf("%s: import %q: only relative imports of embedded modules work without a build step", name, m[1])
				continue
			}
			if target := path.Join(path.Dir(name), m[1]); !isFile(target) {
				t.Errorf("%s: import %q: %s is not embedded", name, m[1], target)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("found only %d imports: the import pattern no longer matches the modules", n)
	}
}

// TestModules runs the unit tests of the UI's pure modules (layout, graph
// model, diff, schema rendering) under Node.
func TestModules(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH, so the UI's JavaScript unit tests (jstest/) cannot run here")
	}
	_, here, _, _ := runtime.Caller(0)
	cmd := exec.Command(node, "--test", filepath.Join(filepath.Dir(here), "jstest"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test jstest: %v\n%s", err, out)
	}
}
