package app_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/authz"
	"github.com/convergehq/converge/server/internal/broker"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
	"github.com/convergehq/converge/server/internal/tlsconf"
)

const (
	adminIdent = "spiffe://td/ns/ops/admin"
	carolIdent = "spiffe://td/ns/data/carol"
	bobIdent   = "spiffe://td/ns/web/bob"
	readIdent  = "spiffe://td/ns/ro/viewer"
)

// authzServer starts a server whose API callers are identified by bearer
// token: admin, carol (team data-platform), bob (team web) and a reader.
func authzServer(t *testing.T) (base string, client func(token string) convergev1connect.ControlServiceClient) {
	t.Helper()
	policy, err := authz.New(
		authz.WithRole(authz.RoleAdmin, adminIdent),
		authz.WithRole(authz.RoleReader, readIdent),
		authz.WithTeam("data-platform", "spiffe://td/ns/data/*"),
		authz.WithTeam("web", "spiffe://td/ns/web/*"),
		authz.WithTokens(map[string]string{"tok-admin": adminIdent, "tok-carol": carolIdent, "tok-bob": bobIdent, "tok-read": readIdent}))
	if err != nil {
		t.Fatal(err)
	}
	return startWithPolicy(t, policy)
}

// startWithPolicy starts a server (all roles) under policy, and returns
// its base URL and a client per bearer token.
func startWithPolicy(t *testing.T, policy *authz.Policy) (base string, client func(token string) convergev1connect.ControlServiceClient) {
	t.Helper()
	db := pgtest.New(t)
	a, err := app.Start(context.Background(), app.Config{
		DatabaseURL: db.URL, Listen: "127.0.0.1:0", Role: app.RoleAll,
		Broker: broker.Config{Lease: 2 * time.Second, HeartbeatInterval: 200 * time.Millisecond,
			PollInterval: 200 * time.Millisecond, Backoff: store.Backoff{Base: 50 * time.Millisecond, Max: 200 * time.Millisecond}},
		Authz: policy,
		Log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Stop() })
	base = "http://" + a.Addr().String()
	return base, func(token string) convergev1connect.ControlServiceClient {
		return convergev1connect.NewControlServiceClient(&http.Client{Transport: bearer{token}}, base)
	}
}

// bearer sends a bearer token with every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func ownedKind(t *testing.T, owner, description string) *convergev1.ApplyKindRequest {
	return &convergev1.ApplyKindRequest{Manifest: &convergev1.KindManifest{
		Kind: "db.cluster", KindVersion: 1, Owner: owner, Description: description,
		SpecSchema: mustStruct(t, map[string]any{"type": "object"}),
		Reactions:  []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}},
	}}
}

func TestAuthorizationOverTokens(t *testing.T) {
	base, client := authzServer(t)
	ctx := context.Background()
	admin, carol, bob, reader := client("tok-admin"), client("tok-carol"), client("tok-bob"), client("tok-read")

	// A team member may register a new kind its manifest gives that team.
	if _, err := carol.ApplyKind(ctx, ownedKind(t, "data-platform", "v1")); err != nil {
		t.Fatalf("owner registers a kind: %v", err)
	}
	// Another team may not change it, and the refusal changes nothing.
	_, err := bob.ApplyKind(ctx, ownedKind(t, "data-platform", "taken over"))
	wantDenied(t, err, bobIdent, "ApplyKind", "db.cluster", "owned by team data-platform", "member of: web")
	got, err := admin.GetKind(ctx, &convergev1.GetKindRequest{Kind: "db.cluster", KindVersion: 1})
	if err != nil || got.GetManifest().GetDescription() != "v1" {
		t.Fatalf("after a refused apply: %q, %v", got.GetManifest().GetDescription(), err)
	}
	_, err = bob.DeleteKind(ctx, &convergev1.DeleteKindRequest{Kind: "db.cluster", KindVersion: 1})
	wantDenied(t, err, bobIdent, "DeleteKind", "db.cluster")

	// bob may not write the kind's resources either; the refusal leaves none.
	res := &convergev1.ApplyResourceRequest{Kind: "db.cluster", KindVersion: 1, Name: "orders", Spec: mustStruct(t, map[string]any{})}
	_, err = bob.ApplyResource(ctx, res)
	wantDenied(t, err, bobIdent, "ApplyResource", "needs role writer or admin, or team data-platform")
	_, err = reader.ApplyResource(ctx, res)
	wantDenied(t, err, readIdent, "ApplyResource", "roles: reader")
	list, err := reader.ListResources(ctx, &convergev1.ListResourcesRequest{Kind: "db.cluster"})
	if err != nil || len(list.GetResources()) != 0 {
		t.Fatalf("after refused writes: %d resources, %v", len(list.GetResources()), err)
	}

	// The owner's write goes through, and its event names the caller.
	if _, err := carol.ApplyResource(ctx, res); err != nil {
		t.Fatalf("owner writes a resource: %v", err)
	}
	events, err := reader.ListEvents(ctx, &convergev1.ListEventsRequest{Kind: "db.cluster", Name: "orders"})
	if err != nil || len(events.GetEvents()) == 0 {
		t.Fatalf("events: %v, %v", events, err)
	}
	for _, e := range events.GetEvents() {
		if strings.HasPrefix(e.GetActor(), "api") && e.GetActor() != "api:"+carolIdent {
			t.Errorf("event %s actor = %q, want api:%s", e.GetReason(), e.GetActor(), carolIdent)
		}
	}
	if a := events.GetEvents()[0].GetActor(); a != "api:"+carolIdent {
		t.Errorf("first event's actor = %q, want api:%s", a, carolIdent)
	}

	// A rollout is a write to the kind: its owner team may start and stop
	// one, another team may not.
	v2 := ownedKind(t, "data-platform", "v2")
	v2.Manifest.KindVersion = 2
	if _, err := carol.ApplyKind(ctx, v2); err != nil {
		t.Fatalf("owner registers v2: %v", err)
	}
	start := &convergev1.StartRolloutRequest{Kind: "db.cluster", ToVersion: 2}
	_, err = bob.StartRollout(ctx, start)
	wantDenied(t, err, bobIdent, "StartRollout", "db.cluster", "owned by team data-platform")
	started, err := carol.StartRollout(ctx, start)
	if err != nil {
		t.Fatalf("owner starts a rollout: %v", err)
	}
	stop := &convergev1.AbortRolloutRequest{RolloutId: started.GetRollout().GetId()}
	_, err = bob.AbortRollout(ctx, stop)
	wantDenied(t, err, bobIdent, "AbortRollout", "db.cluster")
	if _, err := reader.GetRollout(ctx, &convergev1.GetRolloutRequest{RolloutId: stop.RolloutId}); err != nil {
		t.Fatalf("a reader reads a rollout: %v", err)
	}
	if _, err := carol.AbortRollout(ctx, stop); err != nil {
		t.Fatalf("owner aborts the rollout: %v", err)
	}

	// Abandoning skips teardown: the owner team may delete, only an admin
	// may abandon, and a refused dry run of it is refused the same way.
	abandon := &convergev1.DeleteResourceRequest{Kind: "db.cluster", Name: "orders", Abandon: true, Reason: "gone by hand"}
	_, err = carol.DeleteResource(ctx, abandon)
	wantDenied(t, err, carolIdent, "DeleteResource with abandon", "needs role admin")
	_, err = carol.DeleteResource(ctx, &convergev1.DeleteResourceRequest{Kind: "db.cluster", Name: "orders", Abandon: true, Reason: "x", DryRun: true})
	wantDenied(t, err, carolIdent, "DeleteResource with abandon")
	if _, err := admin.DeleteResource(ctx, &convergev1.DeleteResourceRequest{Kind: "db.cluster", Name: "orders", Abandon: true}); connect.CodeOf(err) != connect.CodeInvalidArgument ||
		!strings.Contains(err.Error(), "reason: required") {
		t.Fatalf("abandon without a reason: %v", err)
	}
	gone, err := admin.DeleteResource(ctx, abandon)
	if err != nil || len(gone.GetAbandoned()) != 1 || gone.GetAbandoned()[0].GetName() != "orders" {
		t.Fatalf("admin abandons: %v, %v", gone, err)
	}

	// Without credentials nothing is readable; an unknown token is refused.
	_, err = client("").ListKinds(ctx, &convergev1.ListKindsRequest{})
	wantDenied(t, err, "anonymous caller", "ListKinds")
	if _, err = client("forged").ListKinds(ctx, &convergev1.ListKindsRequest{}); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("unknown token: %v", err)
	}

	// REST goes through the same checks, and so does the NDJSON watch.
	for path, want := range map[string]int{"/api/v1/kinds": http.StatusForbidden, "/api/v1/watch": http.StatusForbidden} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != want || !strings.Contains(string(body), "anonymous caller") {
			t.Errorf("GET %s anonymous: %d %s", path, resp.StatusCode, body)
		}
	}
	req, err := http.NewRequest(http.MethodGet, base+"/api/v1/kinds", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok-read")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "db.cluster") {
		t.Errorf("GET /api/v1/kinds as reader: %d %s", resp.StatusCode, body)
	}
}

// TestAuthorizationOverMutualTLS: the verified SPIFFE ID is the caller.
func TestAuthorizationOverMutualTLS(t *testing.T) {
	ca := testkit.NewCA(t, "ca")
	srv := ca.Server("server")
	db := pgtest.New(t)
	policy, err := authz.New(authz.WithRole(authz.RoleAdmin, opsID))
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Start(context.Background(), app.Config{
		DatabaseURL: db.URL, Listen: "127.0.0.1:0", Role: app.RoleControl,
		TLS: tlsconf.Config{CertFile: srv.CertFile, KeyFile: srv.KeyFile, ClientCAFile: ca.CertFile,
			ClientAuth: tlsconf.ClientAuthRequire, CheckInterval: -1},
		Authz: policy,
		Log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Stop() })
	base := "https://" + a.Addr().String()
	ops, eve := ca.Client("ops", opsID, time.Time{}), ca.Client("eve", intruder, time.Time{})
	admin := convergev1connect.NewControlServiceClient(testkit.TLSClient(t, ca, &ops), base)
	intr := convergev1connect.NewControlServiceClient(testkit.TLSClient(t, ca, &eve), base)
	ctx := context.Background()

	_, err = intr.ApplyKind(ctx, ownedKind(t, "", "v1"))
	wantDenied(t, err, intruder, "ApplyKind", "db.cluster", "no owner team")
	if _, err := admin.ApplyKind(ctx, ownedKind(t, "", "v1")); err != nil {
		t.Fatal(err)
	}
	res := &convergev1.ApplyResourceRequest{Kind: "db.cluster", KindVersion: 1, Name: "orders", Spec: mustStruct(t, map[string]any{})}
	_, err = intr.ApplyResource(ctx, res)
	wantDenied(t, err, intruder, "ApplyResource")
	if _, err := admin.ApplyResource(ctx, res); err != nil {
		t.Fatal(err)
	}
	events, err := admin.ListEvents(ctx, &convergev1.ListEventsRequest{Kind: "db.cluster", Name: "orders"})
	if err != nil || len(events.GetEvents()) == 0 || events.GetEvents()[0].GetActor() != "api:"+opsID {
		t.Fatalf("events = %v, %v; want the first one by api:%s", events.GetEvents(), err, opsID)
	}
}

// TestKindWritesAreEvents: writes to a kind's definition are events of the
// kind naming the caller; a refused write records nothing.
func TestKindWritesAreEvents(t *testing.T) {
	_, client := authzServer(t)
	ctx := context.Background()
	carol, bob, reader := client("tok-carol"), client("tok-bob"), client("tok-read")
	if _, err := carol.ApplyKind(ctx, ownedKind(t, "data-platform", "v1")); err != nil {
		t.Fatal(err)
	}
	if _, err := carol.UpdateKindPolicy(ctx, &convergev1.UpdateKindPolicyRequest{Kind: "db.cluster", KindVersion: 1,
		Policy: &convergev1.KindPolicy{MaxInflight: 3}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"max_inflight"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := carol.ApplyProviderConfig(ctx, &convergev1.ApplyProviderConfigRequest{Config: &convergev1.ProviderConfig{
		Kind: "db.cluster", KindVersion: 1, Name: "default", Config: mustStruct(t, map[string]any{"region": "eu"})}}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.DeleteKind(ctx, &convergev1.DeleteKindRequest{Kind: "db.cluster", KindVersion: 1}); err == nil {
		t.Fatal("bob deleted a kind of another team")
	}
	got, err := reader.ListEvents(ctx, &convergev1.ListEventsRequest{Namespace: "default", Kind: "db.cluster"})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, e := range got.GetEvents() {
		seen = append(seen, e.GetReason()+" "+e.GetMessage()+" by "+e.GetActor())
		if e.GetName() != "v1" || e.GetActor() != "api:"+carolIdent {
			t.Errorf("kind event %s/%s by %s, want db.cluster/v1 by api:%s", e.GetKind(), e.GetName(), e.GetActor(), carolIdent)
		}
	}
	want := []string{
		"ApplyProviderConfig provider config default by api:" + carolIdent,
		"UpdateKindPolicy policy: max_inflight by api:" + carolIdent,
		"ApplyKind manifest by api:" + carolIdent,
	}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Fatalf("kind events, newest first:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}
