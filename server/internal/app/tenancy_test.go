package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/authz"
)

const (
	aliceIdent = "spiffe://td/ns/team-a/alice" // team team-a, writer in team-a-*
	auditIdent = "spiffe://td/ns/audit/eve"    // reader in team-b only
)

// tenantServer starts a server where team team-a may write (and so read)
// the namespaces team-a-*, an auditor may read team-b, and admin does
// everything.
func tenantServer(t *testing.T) (string, func(string) convergev1connect.ControlServiceClient) {
	t.Helper()
	var opts []authz.Option
	for _, g := range []string{"writer:team-a-*=team:team-a", "reader:team-b=" + auditIdent} {
		o, err := authz.ParseGrant(g)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, o)
	}
	policy, err := authz.New(append(opts,
		authz.WithRole(authz.RoleAdmin, adminIdent),
		authz.WithTeam("team-a", "spiffe://td/ns/team-a/*"),
		authz.WithTokens(map[string]string{"tok-admin": adminIdent, "tok-alice": aliceIdent, "tok-audit": auditIdent}))...)
	if err != nil {
		t.Fatal(err)
	}
	return startWithPolicy(t, policy)
}

func tenantResource(t *testing.T, ns, name string) *convergev1.ApplyResourceRequest {
	return &convergev1.ApplyResourceRequest{Namespace: ns, Kind: "db.cluster", KindVersion: 1, Name: name,
		Spec: mustStruct(t, map[string]any{"n": name})}
}

func TestNamespacesAsTenants(t *testing.T) {
	base, client := tenantServer(t)
	ctx := context.Background()
	admin, alice, audit := client("tok-admin"), client("tok-alice"), client("tok-audit")
	if _, err := admin.ApplyKind(ctx, ownedKind(t, "", "v1")); err != nil {
		t.Fatal(err)
	}

	// Writes: team-a writes its namespaces and nothing else; a batch that
	// reaches outside is refused whole.
	for _, ns := range []string{"team-a-1", "team-a-2"} {
		for _, name := range []string{"p", "q", "r"} {
			if _, err := alice.ApplyResource(ctx, tenantResource(t, ns, name)); err != nil {
				t.Fatalf("alice writes %s/%s: %v", ns, name, err)
			}
		}
	}
	_, err := alice.ApplyResource(ctx, tenantResource(t, "team-b", "x"))
	wantDenied(t, err, aliceIdent, "ApplyResource on kind db.cluster in namespace team-b",
		"a writer grant covering namespace team-b", "grants: writer:team-a-*")
	_, err = alice.ApplyResources(ctx, &convergev1.ApplyResourcesRequest{Resources: []*convergev1.ApplyResourceRequest{
		tenantResource(t, "team-a-1", "batched"), tenantResource(t, "team-b", "batched")}})
	wantDenied(t, err, aliceIdent, "in namespace team-b")
	if _, err := admin.GetResource(ctx, &convergev1.GetResourceRequest{Namespace: "team-a-1", Kind: "db.cluster", Name: "batched"}); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("a refused batch left team-a-1/batched behind: %v", err)
	}
	_, err = audit.ApplyResource(ctx, tenantResource(t, "team-b", "x"))
	wantDenied(t, err, auditIdent, "namespace team-b", "grants: reader:team-b")
	for _, name := range []string{"x", "y", "z"} {
		if _, err := admin.ApplyResource(ctx, tenantResource(t, "team-b", name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, op := range []error{
		func() error {
			_, err := alice.DeleteResource(ctx, &convergev1.DeleteResourceRequest{Namespace: "team-b", Kind: "db.cluster", Name: "x"})
			return err
		}(),
		func() error {
			_, err := alice.QuarantineResource(ctx, &convergev1.QuarantineResourceRequest{Namespace: "team-b", Kind: "db.cluster", Name: "x", Reason: "r"})
			return err
		}(),
	} {
		wantDenied(t, op, aliceIdent, "in namespace team-b")
	}

	// Lists page through only what the caller may read; admin sees all.
	want := map[string][]string{
		"alice": {"team-a-1/p", "team-a-1/q", "team-a-1/r", "team-a-2/p", "team-a-2/q", "team-a-2/r"},
		"audit": {"team-b/x", "team-b/y", "team-b/z"},
	}
	want["admin"] = append(append([]string{}, want["alice"]...), want["audit"]...)
	callers := map[string]convergev1connect.ControlServiceClient{"alice": alice, "audit": audit, "admin": admin}
	for who, c := range callers {
		if got := listAll(t, c, 2); !slices.Equal(got, want[who]) {
			t.Errorf("%s lists %v, want %v", who, got, want[who])
		}
		counts, err := c.CountResources(ctx, &convergev1.CountResourcesRequest{})
		if err != nil || counts.GetTotal() != int64(len(want[who])) {
			t.Errorf("%s counts %d (%v), want %d", who, counts.GetTotal(), err, len(want[who]))
		}
	}
	// A filter on a namespace the caller may not read is an empty list.
	if l, err := alice.ListResources(ctx, &convergev1.ListResourcesRequest{Namespace: "team-b"}); err != nil || len(l.GetResources()) != 0 {
		t.Errorf("alice lists team-b: %d resources, %v; want none and no error", len(l.GetResources()), err)
	}
	events, err := alice.ListEvents(ctx, &convergev1.ListEventsRequest{PageSize: 1000})
	if err != nil || len(events.GetEvents()) == 0 {
		t.Fatalf("alice's events: %d, %v", len(events.GetEvents()), err)
	}
	for _, e := range events.GetEvents() {
		if e.GetNamespace() != "" && !strings.HasPrefix(e.GetNamespace(), "team-a-") {
			t.Errorf("alice sees an event of %s", e.GetNamespace())
		}
	}
	// Kind-level reads stay visible to every reader.
	if kinds, err := audit.ListKinds(ctx, &convergev1.ListKindsRequest{}); err != nil || len(kinds.GetManifests()) != 1 {
		t.Errorf("audit lists kinds: %v, %v", kinds, err)
	}

	// One resource of a namespace the caller may not read is 403, whether
	// or not it exists; a missing one where it may read is still 404.
	b := &convergev1.GetResourceRequest{Namespace: "team-b", Kind: "db.cluster", Name: "x"}
	_, err = alice.GetResource(ctx, b)
	wantDenied(t, err, aliceIdent, "GetResource on kind db.cluster in namespace team-b", "reader or writer grant covering namespace team-b")
	_, err = alice.GetResource(ctx, &convergev1.GetResourceRequest{Namespace: "team-b", Kind: "db.cluster", Name: "nosuch"})
	wantDenied(t, err, aliceIdent, "namespace team-b")
	if _, err := alice.GetResource(ctx, &convergev1.GetResourceRequest{Namespace: "team-a-1", Kind: "db.cluster", Name: "nosuch"}); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("a missing resource in a readable namespace: %v, want NotFound", err)
	}
	for name, call := range map[string]func() error{
		"GetResourceHistory": func() error {
			_, err := alice.GetResourceHistory(ctx, &convergev1.GetResourceHistoryRequest{Namespace: "team-b", Kind: "db.cluster", Name: "x"})
			return err
		},
		"GetResourceTree": func() error {
			_, err := alice.GetResourceTree(ctx, &convergev1.GetResourceTreeRequest{Namespace: "team-b", Kind: "db.cluster", Name: "x"})
			return err
		},
		"ExplainResource": func() error {
			_, err := alice.ExplainResource(ctx, &convergev1.ExplainResourceRequest{Namespace: "team-b", Kind: "db.cluster", Name: "x"})
			return err
		},
		"ListTaskRecords": func() error {
			_, err := alice.ListTaskRecords(ctx, &convergev1.ListTaskRecordsRequest{Namespace: "team-b", Kind: "db.cluster", Name: "x"})
			return err
		},
		"ListEvents": func() error {
			_, err := alice.ListEvents(ctx, &convergev1.ListEventsRequest{Namespace: "team-b", Kind: "db.cluster", Name: "x"})
			return err
		},
	} {
		if err := call(); connect.CodeOf(err) != connect.CodePermissionDenied || !strings.Contains(err.Error(), name+" on kind db.cluster in namespace team-b") {
			t.Errorf("alice %s of team-b/x: %v, want PermissionDenied naming it", name, err)
		}
	}
	if code, body := restGet(t, base+"/api/v1/namespaces/team-b/resources/db.cluster/x", "tok-alice"); code != http.StatusForbidden || !strings.Contains(body, aliceIdent) {
		t.Errorf("REST get of team-b/x as alice: %d %s", code, body)
	}
	if code, body := restGet(t, base+"/api/v1/watch?namespace=team-b&kind=db.cluster&name=x", "tok-alice"); code != http.StatusForbidden || !strings.Contains(body, "namespace team-b") {
		t.Errorf("NDJSON watch of team-b/x as alice: %d %s", code, body)
	}
	st, err := alice.Watch(ctx, &convergev1.WatchRequest{Namespace: "team-b", Kind: "db.cluster", Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	for st.Receive() {
		t.Fatalf("a Watch of team-b/x delivered to alice: %v", st.Msg())
	}
	wantDenied(t, st.Err(), aliceIdent, "Watch on kind db.cluster in namespace team-b")
	_ = st.Close()

	// Watch, over Connect and NDJSON, never delivers a team-b change to
	// team-a: change team-b, then team-a-1, and read up to the latter.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	stream, err := alice.Watch(wctx, &convergev1.WatchRequest{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stream.Close() }()
	if !stream.Receive() { // the heartbeat: positioned
		t.Fatalf("watch: %v", stream.Err())
	}
	ndjson := ndjsonWatch(t, wctx, base, "tok-alice")
	for _, r := range []*convergev1.ApplyResourceRequest{tenantResource(t, "team-b", "late"), tenantResource(t, "team-a-1", "sentinel")} {
		if _, err := admin.ApplyResource(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for stream.Receive() {
		if done := checkChanges(t, "Connect", stream.Msg().GetChanges()); done {
			break
		}
	}
	if wctx.Err() != nil {
		t.Fatalf("Connect watch: no sentinel change before the deadline (%v)", stream.Err())
	}
	for ndjson.Scan() {
		var m struct {
			Changes []*struct{ Namespace, Name string }
		}
		if err := json.Unmarshal(ndjson.Bytes(), &m); err != nil {
			t.Fatalf("NDJSON line %s: %v", ndjson.Bytes(), err)
		}
		var chs []*convergev1.Change
		for _, c := range m.Changes {
			chs = append(chs, &convergev1.Change{Namespace: c.Namespace, Name: c.Name})
		}
		if checkChanges(t, "NDJSON", chs) {
			return
		}
	}
	t.Fatalf("NDJSON watch: no sentinel change before the deadline (%v)", ndjson.Err())
}

// checkChanges fails on a change outside team-a-* and reports whether the
// sentinel change arrived.
func checkChanges(t *testing.T, via string, chs []*convergev1.Change) (sentinel bool) {
	t.Helper()
	for _, ch := range chs {
		if ns := ch.GetNamespace(); !strings.HasPrefix(ns, "team-a-") {
			t.Fatalf("%s watch delivered a change of %s/%s to team-a", via, ns, ch.GetName())
		}
		if ch.GetName() == "sentinel" {
			sentinel = true
		}
	}
	return sentinel
}

// listAll pages through ListResources with pages of size, returning
// namespace/name of every resource.
func listAll(t *testing.T, c convergev1connect.ControlServiceClient, size int32) []string {
	t.Helper()
	var out []string
	tok := ""
	for range 100 {
		page, err := c.ListResources(context.Background(), &convergev1.ListResourcesRequest{PageSize: size, PageToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.GetResources()) > int(size) {
			t.Fatalf("a page of %d resources, asked for %d", len(page.GetResources()), size)
		}
		for _, r := range page.GetResources() {
			out = append(out, r.GetNamespace()+"/"+r.GetName())
		}
		if tok = page.GetNextPageToken(); tok == "" {
			return out
		}
	}
	t.Fatal("ListResources never ended")
	return nil
}

func restGet(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// ndjsonWatch opens /api/v1/watch and returns its lines once the stream
// is positioned (its first line, a heartbeat, is consumed).
func ndjsonWatch(t *testing.T, ctx context.Context, base, token string) *bufio.Scanner {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/watch", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("NDJSON watch: %d %s", resp.StatusCode, body)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	if !sc.Scan() {
		t.Fatalf("NDJSON watch: no first line: %v", sc.Err())
	}
	return sc
}

// TestRolloutFailuresInNamespaces: a rollout belongs to its kind and
// every reader sees it, but the failures it lists name resources, and a
// tenant sees only those of namespaces it may read.
func TestRolloutFailuresInNamespaces(t *testing.T) {
	_, client := tenantServer(t)
	ctx := context.Background()
	admin, alice := client("tok-admin"), client("tok-alice")
	if _, err := admin.ApplyKind(ctx, ownedKind(t, "", "v1")); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"team-a-1", "team-b"} {
		if _, err := admin.ApplyResource(ctx, tenantResource(t, ns, "p")); err != nil {
			t.Fatal(err)
		}
	}
	v2 := ownedKind(t, "", "v2")
	v2.Manifest.KindVersion = 2
	// Type-checks, and fails for every spec when it runs.
	v2.Manifest.Conversion = &convergev1.Conversion{Expr: `{"n": string(1 / (size(spec) - size(spec)))}`}
	if _, err := admin.ApplyKind(ctx, v2); err != nil {
		t.Fatal(err)
	}
	started, err := admin.StartRollout(ctx, &convergev1.StartRolloutRequest{Kind: "db.cluster", ToVersion: 2, WaveCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	id := started.GetRollout().GetId()
	deadline := time.Now().Add(20 * time.Second)
	var all *convergev1.Rollout
	for {
		res, err := admin.GetRollout(ctx, &convergev1.GetRolloutRequest{RolloutId: id})
		if err != nil {
			t.Fatal(err)
		}
		if all = res.GetRollout(); all.GetState() == "failed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rollout did not stop on its failing wave: %v", all)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(all.GetFailures()) != 2 {
		t.Fatalf("admin sees failures %v, want both resources'", all.GetFailures())
	}
	res, err := alice.GetRollout(ctx, &convergev1.GetRolloutRequest{RolloutId: id})
	if err != nil {
		t.Fatal(err)
	}
	if f := res.GetRollout().GetFailures(); len(f) != 1 || f[0].GetResource().GetNamespace() != "team-a-1" {
		t.Fatalf("a team-a tenant sees failures %v, want only team-a-1's", f)
	}
}
