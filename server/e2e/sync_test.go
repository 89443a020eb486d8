//go:build unix

package e2e

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// syncNamespace is where the sync trees of testdata/sync put their
// resources.
const syncNamespace = "shop"

// TestSyncAppliesPlansAndPrunes syncs two apps' trees (testdata/sync),
// changes one spec of the shop app and removes two of its files: a dry run
// shows the update and the deletion and changes nothing; sync --prune
// applies the update, tears the removed resource down, keeps the one
// labelled prune=false and leaves the rest, the composite's child and the
// blog app's resource alone.
func TestSyncAppliesPlansAndPrunes(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	applySpecKinds(t, srv.api)
	records := recordFile(t)
	startSpecWorker(t, srv, "specworker", "-record", records)
	root := copyTree(t, testdata(t, "sync"))
	shop, blog := filepath.Join(root, "shop"), filepath.Join(root, "blog")

	if res := conctl(t, srv, "", "sync", blog, "--prune", "--wait"); res.code != 0 || !strings.Contains(res.stdout, "resource shop/fin/x created") {
		t.Fatalf("first sync of the blog app:\n%s", res)
	}
	res := conctl(t, srv, "", "sync", shop, "--prune", "--wait")
	if res.code != 0 || !strings.Contains(res.stdout, "5 of 5 resources ready") {
		t.Fatalf("first sync of the shop app:\n%s", res)
	}
	for _, name := range []string{"a", "b", "c", "keep"} {
		if !strings.Contains(res.stdout, "resource shop/fin/"+name+" created\n") {
			t.Errorf("the first sync does not report fin/%s created:\n%s", name, res)
		}
		if app := nsResource(t, srv, kindFin, name).GetLabels()["converge.dev/app"]; app != "shop" {
			t.Errorf("fin/%s has converge.dev/app=%q; want shop", name, app)
		}
	}
	kid := nsResource(t, srv, kindFin, "s-kid")
	if kid.GetOwner() == nil || kid.GetLabels()["converge.dev/app"] != "" {
		t.Fatalf("the composite's child: owner %v, labels %v; want an owner and no app label", kid.GetOwner(), kid.GetLabels())
	}

	// Change b's spec; remove c and keep from the tree.
	writeTreeFile(t, filepath.Join(shop, "b.yaml"), "type: resource\nkind: fin\nkind_version: 1\nname: b\nspec:\n  upstream: b2\n")
	for _, f := range []string{"c.yaml", "keep.yaml"} {
		if err := os.Remove(filepath.Join(shop, f)); err != nil {
			t.Fatal(err)
		}
	}

	plan := conctl(t, srv, "", "sync", shop, "--prune", "--dry-run")
	if plan.code != 0 {
		t.Fatalf("dry run:\n%s", plan)
	}
	for _, line := range []string{"resource shop/fin/a unchanged", "resource shop/fin/b update (spec)",
		"resource shop/stack/s unchanged", "resource shop/fin/c delete", "resource shop/fin/keep kept (converge.dev/prune=false)",
		"1 to update, 2 unchanged, 1 to delete, 1 kept; nothing was changed"} {
		if !strings.Contains(plan.stdout, line+"\n") && !strings.Contains(plan.stdout, line) {
			t.Errorf("the dry run does not say %q:\n%s", line, plan)
		}
	}
	if strings.Contains(plan.stdout, "fin/x") || strings.Contains(plan.stdout, "s-kid") {
		t.Errorf("the dry run names the blog app's resource or the composite's child:\n%s", plan)
	}
	if b := nsResource(t, srv, kindFin, "b"); b.GetGeneration() != 1 || stringField(b.GetSpec(), "upstream") != "b1" {
		t.Errorf("after the dry run fin/b has generation %d and upstream %q; want 1 and b1", b.GetGeneration(), stringField(b.GetSpec(), "upstream"))
	}
	if c := nsResource(t, srv, kindFin, "c"); c.GetDeletionRequestedAt() != nil {
		t.Errorf("after the dry run fin/c is being deleted: %s", explain(c))
	}

	res = conctl(t, srv, "", "sync", shop, "--prune", "--wait")
	if res.code != 0 {
		t.Fatalf("sync --prune:\n%s", res)
	}
	for _, line := range []string{"resource shop/fin/a unchanged", "resource shop/fin/b configured", "resource shop/fin/c deleting (pruned)",
		"resource shop/fin/keep kept (converge.dev/prune=false)", "3 of 3 resources ready", "1 of 1 pruned resources deleted"} {
		if !strings.Contains(res.stdout, line) {
			t.Errorf("sync --prune does not say %q:\n%s", line, res)
		}
	}
	if _, err := tryNsResource(srv, kindFin, "c"); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("fin/c after sync --prune --wait: %v; want not found", err)
	}
	b := nsResource(t, srv, kindFin, "b")
	if b.GetGeneration() != 2 || b.GetSyncedGeneration() != 2 || stringField(b.GetStatus(), "upstream") != "b2" {
		t.Errorf("fin/b: %s status upstream %q; want generation 2 synced, upstream b2", explain(b), stringField(b.GetStatus(), "upstream"))
	}
	for _, name := range []string{"a", "keep", "x", "s-kid"} {
		if r := nsResource(t, srv, kindFin, name); r.GetGeneration() != 1 || r.GetDeletionRequestedAt() != nil {
			t.Errorf("fin/%s was touched by the shop's sync: %s", name, explain(r))
		}
	}
	if app := nsResource(t, srv, kindFin, "x").GetLabels()["converge.dev/app"]; app != "blog" {
		t.Errorf("fin/x has converge.dev/app=%q; want blog", app)
	}
	all := readRecords(t, records)
	if n := len(recordsOf(all, "teardown", kindFin, "c")); n != 1 {
		t.Errorf("the teardown of the pruned fin/c ran %d times; want once. Records: %s", n, renderRecords(all))
	}
	for _, name := range []string{"a", "b", "keep", "x", "s-kid"} {
		if n := len(recordsOf(all, "teardown", kindFin, name)); n != 0 {
			t.Errorf("the teardown of fin/%s ran %d times; want never. Records: %s", name, n, renderRecords(all))
		}
	}

	// Once in sync, syncing again changes nothing.
	again := conctl(t, srv, "", "sync", shop, "--prune")
	if again.code != 0 || !strings.Contains(again.stdout, "synced app shop: 3 unchanged, 1 kept (converge.dev/prune=false)") {
		t.Errorf("a second sync --prune:\n%s", again)
	}
}

// TestSyncRefusesABadTreeWholesale gives sync a tree in which one document
// is a manifest: it names the file and line and applies nothing.
func TestSyncRefusesABadTreeWholesale(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	applySpecKinds(t, srv.api)
	root := copyTree(t, testdata(t, "sync"))
	shop := filepath.Join(root, "shop")
	writeTreeFile(t, filepath.Join(shop, "zz-kind.yaml"), "type: manifest\nkind: extra\nkind_version: 1\nowner: e2e\nspec_schema: {type: object}\n")

	res := conctl(t, srv, "", "sync", shop)
	want := filepath.Join(shop, "zz-kind.yaml") + `: document 1 (line 1): a "manifest" document: sync applies resources only`
	if res.code != 1 || !strings.Contains(res.stderr, want) {
		t.Fatalf("sync of a tree holding a manifest: want exit 1 and %q\n%s", want, res)
	}
	for _, name := range []string{"a", "b", "c", "keep"} {
		if _, err := tryNsResource(srv, kindFin, name); connect.CodeOf(err) != connect.CodeNotFound {
			t.Errorf("fin/%s after a refused sync: %v; want not found", name, err)
		}
	}
}

// copyTree copies the directory src into a new temporary directory and
// returns the copy, which a test may change.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), raw, 0o644)
	})
	if err != nil {
		t.Fatalf("copying %s: %v", src, err)
	}
	return dst
}

func writeTreeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// nsResource reads kind/name in syncNamespace.
func nsResource(t *testing.T, s *server, kind, name string) *convergev1.Resource {
	t.Helper()
	r, err := tryNsResource(s, kind, name)
	if err != nil {
		t.Fatalf("get resource %s/%s/%s: %v", syncNamespace, kind, name, err)
	}
	return r
}

func tryNsResource(s *server, kind, name string) (*convergev1.Resource, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	resp, err := s.api.GetResource(ctx, &convergev1.GetResourceRequest{Namespace: syncNamespace, Kind: kind, Name: name})
	return resp.GetResource(), err
}
