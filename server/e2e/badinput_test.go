//go:build unix

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// TestBadInput feeds conctl and the REST API input they must refuse, and
// checks that each refusal names what is wrong and applies nothing.
func TestBadInput(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	applyKind(t, srv.api, leafKind(t, "greeting"))

	// refused runs conctl apply and checks it failed with an error that
	// matches every pattern.
	refused := func(t *testing.T, stdin string, patterns []string, args ...string) ctlResult {
		t.Helper()
		res := conctl(t, srv, stdin, append([]string{"apply"}, args...)...)
		if res.code == 0 {
			t.Fatalf("conctl apply succeeded, want a refusal:\n%s", res)
		}
		for _, p := range patterns {
			if !regexp.MustCompile(p).MatchString(res.stderr) {
				t.Errorf("the error does not match %q:\n%s", p, res)
			}
		}
		return res
	}

	t.Run("malformed YAML", func(t *testing.T) {
		path := testdata(t, "malformed.yaml")
		line := lineOf(t, path, "spec: {name: broken}")
		refused(t, "", []string{regexp.QuoteMeta(path), fmt.Sprintf(`\bline %d\b`, line)}, "-f", path)
		checkNoKind(t, srv.api, "widget")
		checkNoResources(t, srv.api, "greeting")
	})
	t.Run("malformed JSON", func(t *testing.T) {
		path := testdata(t, "malformed.json")
		line := lineOf(t, path, `"name": "json-broken" "spec"`)
		refused(t, "", []string{regexp.QuoteMeta(path), fmt.Sprintf(`\bline %d\b`, line)}, "-f", path)
		checkNoKind(t, srv.api, "gadget")
		checkNoResources(t, srv.api, "greeting")
	})
	t.Run("unknown kind", func(t *testing.T) {
		refused(t, "type: resource\nkind: nosuchkind\nkind_version: 1\nname: r1\nspec: {name: x}\n",
			[]string{`\bnosuchkind\b`}, "-f", "-")
		checkAbsent(t, srv.api, "nosuchkind", "r1")
	})
	t.Run("unknown kind version", func(t *testing.T) {
		refused(t, "type: resource\nkind: greeting\nkind_version: 7\nname: r2\nspec: {name: x}\n",
			[]string{`\bgreeting\b`, `\b(v|version )7\b`}, "-f", "-")
		checkAbsent(t, srv.api, "greeting", "r2")
	})
	t.Run("spec violates the schema", func(t *testing.T) {
		refused(t, "type: resource\nkind: greeting\nkind_version: 1\nname: r3\nspec: {name: 42}\n",
			[]string{`(^|[\s'"])/name\b`}, "-f", "-")
		checkAbsent(t, srv.api, "greeting", "r3")
	})
	t.Run("illegal manifest", func(t *testing.T) {
		refused(t, "", []string{`\bM4\b`, `\bteardown\b`}, "-f", testdata(t, "illegal-manifest.yaml"))
		checkNoKind(t, srv.api, "illegal")
	})
	t.Run("oversized spec", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "big.json")
		doc, err := json.Marshal(map[string]any{"type": "resource", "kind": "greeting", "kind_version": 1, "name": "big",
			"spec": map[string]any{"name": strings.Repeat("x", 600<<10)}})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		refused(t, "", []string{`\b524288\b|\b512 ?KiB\b`}, "-f", path)
		checkAbsent(t, srv.api, "greeting", "big")
	})
	t.Run("REST malformed JSON", func(t *testing.T) {
		code, msg := postJSON(t, srv.url+"/api/v1/resources", `{"kind": "greeting", "kind_version": 1, "name": `)
		if code != http.StatusBadRequest || msg == "" {
			t.Fatalf("POST of malformed JSON: %d %q, want 400 with a message", code, msg)
		}
	})
	t.Run("REST spec violates the schema", func(t *testing.T) {
		code, msg := postJSON(t, srv.url+"/api/v1/resources", `{"kind": "greeting", "kind_version": 1, "name": "r4", "spec": {"name": 42}}`)
		if code != http.StatusBadRequest || !strings.Contains(msg, "/name") {
			t.Fatalf("POST of a spec violating the schema: %d %q, want 400 naming /name", code, msg)
		}
		checkAbsent(t, srv.api, "greeting", "r4")
	})
	t.Run("OpenAPI document", func(t *testing.T) {
		checkOpenAPI(t, srv.url+"/openapi.json")
	})
}

// testdata returns the absolute path of a file in testdata, recorded as an
// input of the test (conctl reads it in another process).
func testdata(t *testing.T, name string) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("testdata: %v", err)
	}
	return path
}

// lineOf returns the 1-based number of the only line of path containing
// marker.
func lineOf(t *testing.T, path, marker string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	found := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if strings.Contains(sc.Text(), marker) {
			if found != 0 {
				t.Fatalf("%s: %q is on lines %d and %d", path, marker, found, n)
			}
			found = n
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatalf("%s: no line contains %q", path, marker)
	}
	return found
}

func checkAbsent(t *testing.T, c *client.Client, kind, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	_, err := c.GetResource(ctx, &convergev1.GetResourceRequest{Kind: kind, Name: name})
	if connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("resource %s/%s after a refused apply: got error %v, want NotFound", kind, name, err)
	}
}

func checkNoResources(t *testing.T, c *client.Client, kind string) {
	t.Helper()
	if all := listResources(t, c, kind); len(all) > 0 {
		t.Errorf("after a refused apply, %d %s resources exist, want none: %s", len(all), kind, describeSome(all, func(*convergev1.Resource) bool { return true }))
	}
}

func checkNoKind(t *testing.T, c *client.Client, kind string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	resp, err := c.ListKinds(ctx, &convergev1.ListKindsRequest{Kind: kind})
	if err != nil {
		t.Fatalf("list kinds: %v", err)
	}
	if n := len(resp.GetManifests()); n > 0 {
		t.Errorf("after a refused apply, kind %s has %d versions, want none", kind, n)
	}
}

// postJSON POSTs body and returns the status code and the error message of
// the JSON answer, if any.
func postJSON(t *testing.T, url, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: reading the answer: %v", url, err)
	}
	var answer struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		t.Fatalf("POST %s: %s with a body that is not JSON (%v): %s", url, resp.Status, err, raw)
	}
	return resp.StatusCode, answer.Message
}

// checkOpenAPI fetches an OpenAPI document and checks it is OpenAPI 3 and
// describes the resources endpoint.
func checkOpenAPI(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	var doc struct {
		OpenAPI string                     `json:"openapi"`
		Paths   map[string]json.RawMessage `json:"paths"`
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("GET %s: not JSON: %v", url, err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Errorf("GET %s: \"openapi\" is %q, want 3.x", url, doc.OpenAPI)
	}
	if _, ok := doc.Paths["/api/v1/resources"]; !ok {
		t.Errorf("GET %s: no path /api/v1/resources among %d paths", url, len(doc.Paths))
	}
}
