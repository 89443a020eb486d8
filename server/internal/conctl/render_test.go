package conctl_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stdcelExample is the std.graph example the stdworker docs run.
var stdcelExample = filepath.Join("..", "..", "..", "stdworker", "examples", "stdcel")

// noServer is where render would find a server; it never calls one.
const noServer = "http://127.0.0.1:1"

func TestRenderComposesOffline(t *testing.T) {
	ex := func(name string) string { return filepath.Join(stdcelExample, name) }
	args := []string{"render", "-f", ex("graph.yaml"), "-f", ex("kinds.yaml"), "-f", ex("instance.yaml")}

	// Nothing observed: the children as the composer emits them, and the
	// service waiting for its database.
	r := run(testContext(t), noServer, "", args...)
	if r.code != 0 {
		t.Fatalf("render: %+v", r)
	}
	for _, want := range []string{
		"default/webapp/shop (graph default/std.graph/webapp): 2 children, 1 edges",
		"+ demo.database/shop-db v1\n      spec: {\"engine\":\"postgres\",\"size_gb\":30}",
		"+ demo.service/shop v1  after demo.database/shop-db",
		"waits for demo.database/shop-db: it is not in the observed children",
		"not ready: db demo.database/shop-db does not exist yet",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("render lacks %q:\n%s", want, r.stdout)
		}
	}

	// With the database observed, its address flows into the service's
	// spec and the status is projected, as the server and stdcel would.
	observed := filepath.Join(t.TempDir(), "observed.yaml")
	if err := os.WriteFile(observed, []byte(`
demo.database/shop-db:
  status: {host: db.internal, port: 5432, engine: postgres, ready: true}
demo.service/shop:
  status: {url: "https://shop.example.com", replicas: 3, database_url: "postgres://db.internal:5432/shop"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(testContext(t), noServer, "", append(args, "--observed", observed, "-o", "json")...)
	if r.code != 0 {
		t.Fatalf("render --observed: %+v", r)
	}
	var got []struct {
		Children []struct {
			Name    string         `json:"name"`
			Spec    map[string]any `json:"spec"`
			Waiting []string       `json:"waiting"`
		} `json:"children"`
		Status   map[string]any `json:"status"`
		NotReady []string       `json:"not_ready"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 1 || len(got[0].Children) != 2 {
		t.Fatalf("render -o json: %v\n%s", err, r.stdout)
	}
	svc := got[0].Children[1]
	if svc.Name != "shop" || svc.Spec["database_url"] != "postgres://db.internal:5432/shop" || len(svc.Waiting) != 0 {
		t.Errorf("the service with its database observed: %+v", svc)
	}
	if got[0].Status["url"] != "https://shop.example.com" || len(got[0].NotReady) != 0 {
		t.Errorf("projected status %v, not ready %v", got[0].Status, got[0].NotReady)
	}
}

func TestRenderRefusals(t *testing.T) {
	ex := func(name string) string { return filepath.Join(stdcelExample, name) }
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no graph", []string{"render", "-f", ex("instance.yaml")}, "no std.graph resource in the inputs"},
		{"kinds missing", []string{"render", "-f", ex("graph.yaml"), "-f", ex("instance.yaml")},
			"resources[0].kind: kind demo.database v1 is not among the files; add its manifest with -f"},
		{"no files", []string{"render"}, "render needs at least one -f"},
	} {
		r := run(testContext(t), noServer, "", tc.args...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want it to say %q", tc.name, r.code, r.stderr, tc.want)
		}
	}
	bad := filepath.Join(t.TempDir(), "observed.yaml")
	if err := os.WriteFile(bad, []byte("shop-db:\n  status: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(testContext(t), noServer, "", "render", "-f", ex("graph.yaml"), "-f", ex("kinds.yaml"), "--observed", bad)
	if r.code == 0 || !strings.Contains(r.stderr, `"shop-db": keys are KIND/NAME`) {
		t.Errorf("a bad observed key: %+v", r)
	}
}

// TestRenderStarlark renders the stdstarlark example's pipeline: three
// stages, each after the one before, with the observed output of stage 0
// flowing into stage 1's environment.
func TestRenderStarlark(t *testing.T) {
	ex := filepath.Join("..", "..", "..", "stdworker", "examples", "stdstarlark")
	observed := filepath.Join(t.TempDir(), "observed.yaml")
	if err := os.WriteFile(observed, []byte("std.shell/hello-stage-0:\n  status: {stdout_tail: \"hello -> 0\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(testContext(t), noServer, "", "render", "--starlark", filepath.Join(ex, "bundle"),
		"-f", filepath.Join(ex, "resources.yaml"), "--observed", observed)
	if r.code != 0 {
		t.Fatalf("render --starlark: %+v", r)
	}
	for _, want := range []string{
		"default/example.pipeline/hello (starlark bundle " + filepath.Join(ex, "bundle") + "): 3 children, 2 edges",
		"+ std.shell/hello-stage-1 v1  after std.shell/hello-stage-0\n      spec: {\"env\":{\"STAGE\":\"1\",\"UPSTREAM\":\"hello -> 0\"}",
		"+ std.shell/hello-stage-2 v1  after std.shell/hello-stage-1\n",
		"waits for std.shell/hello-stage-1: it is not in the observed children",
		`status: {"last":"hello-stage-2","stages":3}`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("render --starlark lacks %q:\n%s", want, r.stdout)
		}
	}
	if r := run(testContext(t), noServer, "", "render", "-f", filepath.Join(ex, "resources.yaml"), "--main", "x.star"); r.code == 0 ||
		!strings.Contains(r.stderr, "--main: only with --starlark") {
		t.Errorf("--main without --starlark: %+v", r)
	}
	if r := run(testContext(t), noServer, "", "render", "--starlark", ex, "-f", filepath.Join(ex, "resources.yaml")); r.code == 0 ||
		!strings.Contains(r.stderr, "main.star is not a file of the bundle") {
		t.Errorf("a directory that is not a bundle: %+v", r)
	}
}
