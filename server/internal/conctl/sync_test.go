package conctl_test

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

const shopMarker = "app: shop\nnamespace: shop\n"

// greetingDoc is a resource document of kind greeting; extra is added
// at the top level, e.g. "labels: {tier: db}\n".
func greetingDoc(name, greeting, extra string) string {
	return "type: resource\nkind: greeting\nkind_version: 1\nname: " + name + "\nspec: {greeting: " + greeting + "}\n" + extra
}

// syncMember is a greeting of namespace shop as the server holds it, labelled
// for app (none when empty) plus extra labels.
func syncMember(t *testing.T, name, app, greeting string, extra map[string]string) *convergev1.Resource {
	t.Helper()
	labels := map[string]string{}
	if app != "" {
		labels["converge.dev/app"] = app
	}
	maps.Copy(labels, extra)
	return &convergev1.Resource{Namespace: "shop", Kind: "greeting", KindVersion: 1, Name: name, Labels: labels,
		Spec: spec(t, map[string]any{"greeting": greeting}), Phase: "Ready", Generation: 1, SyncedGeneration: 1,
		Uid: "uid-" + name}
}

// shopTree declares a (as on the server), b (spec changed), c (a label
// added) and n (new); the server also holds d (no longer declared), e
// (no longer declared, opted out of pruning), a child of a composite,
// and x of another app.
func shopTree(t *testing.T, f *fakeControl) string {
	t.Helper()
	f.add(syncMember(t, "a", "shop", "hi", nil))
	f.add(syncMember(t, "b", "shop", "old", nil))
	f.add(syncMember(t, "c", "shop", "hi", nil))
	f.add(syncMember(t, "d", "shop", "hi", nil))
	f.add(syncMember(t, "e", "shop", "hi", map[string]string{"converge.dev/prune": "false"}))
	child := syncMember(t, "child", "shop", "hi", nil)
	child.Owner = &convergev1.ResourceRef{Kind: "stack", Name: "s"}
	f.add(child)
	f.add(syncMember(t, "x", "other", "hi", nil))
	return writeSyncTree(t, map[string]string{
		"converge.yaml": shopMarker,
		"a.yaml":        greetingDoc("a", "hi", ""),
		"b/b.yaml":      greetingDoc("b", "new", ""),
		"c.yaml":        greetingDoc("c", "hi", "labels: {tier: db}\n"),
		"sub/n.json":    `{"type": "resource", "kind": "greeting", "kind_version": 1, "name": "n", "spec": {"greeting": "hi"}}`,
		".hidden.yaml":  "not: a document",
	})
}

// changingCalls are the calls that change the server.
func changingCalls(calls []string) []string {
	var out []string
	for _, c := range calls {
		if strings.HasPrefix(c, "Apply") || strings.HasPrefix(c, "Delete") {
			out = append(out, c)
		}
	}
	return out
}

func syncSnapshot(f *fakeControl) map[string]*convergev1.Resource {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]*convergev1.Resource{}
	for k, r := range f.resources {
		out[k] = proto.CloneOf(r)
	}
	return out
}

func TestSyncDryRunPrintsThePlanAndChangesNothing(t *testing.T) {
	f, url := newFake(t)
	dir := shopTree(t, f)
	before := syncSnapshot(f)

	r := run(testContext(t), url, "", "sync", dir, "--prune", "--dry-run")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	want := `resource shop/greeting/a unchanged
resource shop/greeting/b update (spec)
resource shop/greeting/c update (labels)
resource shop/greeting/n create
resource shop/greeting/d delete
resource shop/greeting/e kept (converge.dev/prune=false)
dry run of app shop: 1 to create, 2 to update, 1 unchanged, 1 to delete, 1 kept; nothing was changed
`
	if r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	if calls := changingCalls(f.callLog()); len(calls) > 0 {
		t.Errorf("--dry-run made changing calls: %q", calls)
	}
	after := syncSnapshot(f)
	if len(after) != len(before) {
		t.Fatalf("--dry-run changed the set of resources: %d before, %d after", len(before), len(after))
	}
	for k, r := range before {
		if !proto.Equal(r, after[k]) {
			t.Errorf("--dry-run changed %s: %v -> %v", k, r, after[k])
		}
	}
}

func TestSyncDryRunWithoutPruneCountsUndeclared(t *testing.T) {
	f, url := newFake(t)
	dir := shopTree(t, f)
	r := run(testContext(t), url, "", "sync", dir, "--dry-run")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if plan, _, _ := strings.Cut(r.stdout, "dry run"); strings.Contains(plan, "delete") || strings.Contains(plan, "kept") {
		t.Errorf("without --prune the plan shows deletions:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "2 resources of app shop are not in the tree; sync --prune deletes them") {
		t.Errorf("stdout does not count d and e as not in the tree:\n%s", r.stdout)
	}
}

func TestSyncDryRunJSON(t *testing.T) {
	f, url := newFake(t)
	dir := shopTree(t, f)
	r := run(testContext(t), url, "", "sync", dir, "--prune", "--dry-run", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	var rep struct {
		App       string `json:"app"`
		Marker    string `json:"marker"`
		DryRun    bool   `json:"dry_run"`
		Resources []struct {
			Name    string   `json:"name"`
			Source  string   `json:"source"`
			Action  string   `json:"action"`
			Changes []string `json:"changes"`
			Result  string   `json:"result"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
	if rep.App != "shop" || !rep.DryRun || rep.Marker != filepath.Join(dir, "converge.yaml") {
		t.Errorf("report: app %q dry_run %v marker %q; want shop, true, %s", rep.App, rep.DryRun, rep.Marker, filepath.Join(dir, "converge.yaml"))
	}
	got := map[string]string{}
	for _, it := range rep.Resources {
		got[it.Name] = it.Action + " " + strings.Join(it.Changes, ",") + it.Result
	}
	want := map[string]string{"a": "unchanged ", "b": "update spec", "c": "update labels", "n": "create ", "d": "delete ", "e": "keep "}
	if !maps.Equal(got, want) {
		t.Errorf("actions: %v; want %v", got, want)
	}
	if src := rep.Resources[1].Source; !strings.Contains(src, filepath.Join("b", "b.yaml")+": document 1 (line 1)") {
		t.Errorf("b's source is %q; want its file and line", src)
	}
}

func TestSyncPruneAppliesStampsAndDeletes(t *testing.T) {
	f, url := newFake(t)
	f.maxPage = 2 // the scope listing takes several pages
	dir := shopTree(t, f)

	r := run(testContext(t), url, "", "sync", dir, "--prune")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	for _, line := range []string{
		"resource shop/greeting/n created",
		"resource shop/greeting/b configured",
		"resource shop/greeting/d deleting (pruned)",
		"resource shop/greeting/e kept (converge.dev/prune=false)",
		"synced app shop: ",
	} {
		if !strings.Contains(r.stdout, line+"\n") && !strings.Contains(r.stdout, line) {
			t.Errorf("stdout lacks %q:\n%s", line, r.stdout)
		}
	}
	want := []string{"ApplyResources 4", "DeleteResource shop/greeting/d"}
	if calls := changingCalls(f.callLog()); !slices.Equal(calls, want) {
		t.Errorf("changing calls: %q; want %q", calls, want)
	}
	after := syncSnapshot(f)
	for _, name := range []string{"a", "b", "c", "n"} {
		if app := after["shop/greeting/"+name].GetLabels()["converge.dev/app"]; app != "shop" {
			t.Errorf("greeting/%s has converge.dev/app=%q; want shop", name, app)
		}
	}
	if got := after["shop/greeting/c"].GetLabels()["tier"]; got != "db" {
		t.Errorf("greeting/c lost its own label tier: %q", got)
	}
	for _, name := range []string{"child", "x", "e"} {
		if after["shop/greeting/"+name].GetPhase() == "Deleting" {
			t.Errorf("greeting/%s was pruned", name)
		}
	}
}

func TestSyncWithoutPruneDeletesNothing(t *testing.T) {
	f, url := newFake(t)
	dir := shopTree(t, f)
	r := run(testContext(t), url, "", "sync", dir)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if calls := changingCalls(f.callLog()); !slices.Equal(calls, []string{"ApplyResources 4"}) {
		t.Errorf("changing calls: %q; want the apply alone", calls)
	}
	if !strings.Contains(r.stdout, "2 resources of app shop are not in the tree") {
		t.Errorf("stdout does not say d and e are not in the tree:\n%s", r.stdout)
	}
}

func TestSyncNamespaceDefaults(t *testing.T) {
	f, url := newFake(t)
	root := writeSyncTree(t, map[string]string{
		"converge.yaml":  "app: blog\n",
		"web/post.yaml":  greetingDoc("post", "hi", ""),
		"web/other.yaml": greetingDoc("other", "hi", "namespace: ops\n"),
	})
	// Synced from below the marker, without --prune: the marker is found
	// above, and documents without a namespace go to --namespace.
	r := run(testContext(t), url, "", "sync", filepath.Join(root, "web"), "-n", "team-a")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	after := syncSnapshot(f)
	for _, k := range []string{"team-a/greeting/post", "ops/greeting/other"} {
		if app := after[k].GetLabels()["converge.dev/app"]; app != "blog" {
			t.Errorf("%s: converge.dev/app=%q; want blog (resources: %v)", k, app, slices.Sorted(maps.Keys(after)))
		}
	}
}

func TestSyncRefusesTreesWithProblems(t *testing.T) {
	manifest := "type: manifest\nkind: greeting\nkind_version: 1\nspec_schema: {type: object}\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		args  []string
		want  []string
	}{
		{name: "not a resource", files: map[string]string{"converge.yaml": shopMarker, "a.yaml": greetingDoc("a", "hi", ""),
			"kinds.yaml": greetingDoc("z", "hi", "") + "---\n" + manifest},
			want: []string{"kinds.yaml: document 2 (line 7): a \"manifest\" document: sync applies resources only"}},
		{name: "no marker", files: map[string]string{"a.yaml": greetingDoc("a", "hi", "")},
			want: []string{"no converge.yaml in this directory or above it"}},
		{name: "duplicate", files: map[string]string{"converge.yaml": shopMarker, "a.yaml": greetingDoc("a", "hi", ""),
			"b/a.yaml": greetingDoc("a", "there", "")},
			want: []string{filepath.Join("b", "a.yaml") + ": document 1 (line 1): resource shop/greeting/a is also in"}},
		{name: "label of another app", files: map[string]string{"converge.yaml": shopMarker,
			"a.yaml": greetingDoc("a", "hi", "labels: {converge.dev/app: blog}\n")},
			want: []string{"a.yaml: document 1 (line 1): labels.converge.dev/app: \"blog\", but this tree is app \"shop\""}},
		{name: "bad app name", files: map[string]string{"converge.yaml": "app: Shop!\n", "a.yaml": greetingDoc("a", "hi", "")},
			want: []string{"converge.yaml: app: \"Shop!\" is not an app name"}},
		{name: "no app", files: map[string]string{"converge.yaml": "namespace: shop\n", "a.yaml": greetingDoc("a", "hi", "")},
			want: []string{"converge.yaml: app: required"}},
		{name: "unknown marker field", files: map[string]string{"converge.yaml": "app: shop\nnamspace: x\n"},
			want: []string{"converge.yaml: line 2: field namspace not found"}},
		{name: "nested marker", files: map[string]string{"converge.yaml": shopMarker, "blog/converge.yaml": "app: blog\n",
			"blog/a.yaml": greetingDoc("a", "hi", "")},
			want: []string{filepath.Join("blog", "converge.yaml") + ": a second app marker inside the tree"}},
		{name: "prune below the marker", files: map[string]string{"converge.yaml": shopMarker, "web/a.yaml": greetingDoc("a", "hi", "")},
			args: []string{"web", "--prune"},
			want: []string{"--prune: ", "is below the root of app \"shop\""}},
		{name: "bad document and duplicate together", files: map[string]string{"converge.yaml": shopMarker,
			"a.yaml": greetingDoc("a", "hi", "") + "---\n" + manifest, "b.yaml": greetingDoc("a", "hi", "")},
			want: []string{"a.yaml: document 2 (line 7): a \"manifest\" document", "b.yaml: document 1 (line 1): resource shop/greeting/a is also in"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, url := newFake(t)
			dir := writeSyncTree(t, tc.files)
			args := []string{"sync", dir}
			if tc.args != nil {
				args = []string{"sync", filepath.Join(dir, tc.args[0])}
				args = append(args, tc.args[1:]...)
			}
			r := run(testContext(t), url, "", args...)
			if r.code != 1 {
				t.Fatalf("exit %d; want 1. stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if calls := changingCalls(f.callLog()); len(calls) > 0 {
				t.Errorf("a tree with problems made changing calls: %q", calls)
			}
		})
	}
}

func TestSyncRefusesAResourceOfAnotherApp(t *testing.T) {
	f, url := newFake(t)
	f.add(syncMember(t, "x", "blog", "hi", nil))
	dir := writeSyncTree(t, map[string]string{"converge.yaml": shopMarker,
		"a.yaml": greetingDoc("a", "hi", ""), "x.yaml": greetingDoc("x", "hi", "")})
	r := run(testContext(t), url, "", "sync", dir)
	if r.code != 1 || !strings.Contains(r.stderr, "x.yaml: document 1 (line 1): resource shop/greeting/x belongs to app \"blog\"") {
		t.Fatalf("exit %d; want 1 naming x.yaml and app blog. stderr:\n%s", r.code, r.stderr)
	}
	if calls := changingCalls(f.callLog()); len(calls) > 0 {
		t.Errorf("changing calls: %q; want none", calls)
	}
}

func TestSyncAdoptsAnUnlabelledResource(t *testing.T) {
	f, url := newFake(t)
	f.add(syncMember(t, "a", "", "hi", nil))
	dir := writeSyncTree(t, map[string]string{"converge.yaml": shopMarker, "a.yaml": greetingDoc("a", "hi", "")})
	r := run(testContext(t), url, "", "sync", dir, "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "resource shop/greeting/a update (labels)\n") {
		t.Fatalf("exit %d; want the label to be added. stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if f.resourceGets != 1 {
		t.Errorf("%d GetResource calls; want 1 for the resource not yet in the app", f.resourceGets)
	}
}

func TestSyncWaitsForAppliedAndPruned(t *testing.T) {
	f, url := newFake(t)
	dir := shopTree(t, f)
	ctx := testContext(t)
	_, _, done := background(ctx, url, "", "sync", dir, "--prune", "--wait")

	f.waitRegistered(t) // the apply waiter
	for _, name := range []string{"a", "b", "c", "n"} {
		f.setPhase("shop", "greeting", name, "Ready", "")
	}
	f.waitRegistered(t) // waiting for the pruned resource to go
	f.remove("shop", "greeting", "d")
	r := <-done
	if r.code != 0 {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, line := range []string{"4 of 4 resources ready", "1 of 1 pruned resources deleted"} {
		if !strings.Contains(r.stdout, line) {
			t.Errorf("stdout lacks %q:\n%s", line, r.stdout)
		}
	}
}

func TestSyncJSONReportsResults(t *testing.T) {
	f, url := newFake(t)
	dir := shopTree(t, f)
	r := run(testContext(t), url, "", "sync", dir, "--prune", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	var rep struct {
		DryRun    bool `json:"dry_run"`
		Resources []struct {
			Name   string `json:"name"`
			Action string `json:"action"`
			Result string `json:"result"`
			UID    string `json:"uid"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, r.stdout)
	}
	got := map[string]string{}
	for _, it := range rep.Resources {
		got[it.Name] = it.Action + "/" + it.Result
		if it.UID == "" {
			t.Errorf("%s has no uid", it.Name)
		}
	}
	want := map[string]string{"a": "unchanged/unchanged", "b": "update/configured", "c": "update/unchanged", "n": "create/created",
		"d": "delete/deleting", "e": "keep/kept (converge.dev/prune=false)"}
	if rep.DryRun || !maps.Equal(got, want) {
		t.Errorf("dry_run %v, results %v; want false, %v", rep.DryRun, got, want)
	}
}

func TestSyncFlagErrors(t *testing.T) {
	f, url := newFake(t)
	dir := shopTree(t, f)
	for _, args := range [][]string{
		{"sync", dir, "--dry-run", "--wait"},
		{"sync", dir, "--timeout", "0s"},
		{"sync"},
		{"sync", filepath.Join(dir, "a.yaml")},
	} {
		r := run(testContext(t), url, "", args...)
		if r.code != 1 || !strings.Contains(r.stderr, "error: ") {
			t.Errorf("conctl %q: exit %d, stderr %q; want exit 1 with an error", args, r.code, r.stderr)
		}
	}
	if calls := changingCalls(f.callLog()); len(calls) > 0 {
		t.Errorf("changing calls: %q; want none", calls)
	}
}
