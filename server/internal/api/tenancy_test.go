package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/api"
	"github.com/convergehq/converge/server/internal/authz"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/members"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/rpcvalidate"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
	"github.com/convergehq/converge/server/internal/trigger"
)

// bearerTransport sends a bearer token over h2c.
type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestCrossNamespaceEdgeShowsNoState: a composite in team-a-1 whose child
// depends on a resource in team-b (a declared reference). Team A's graph
// names that end without its state, and explain stops there with
// NotReadable; admin sees both.
func TestCrossNamespaceEdgeShowsNoState(t *testing.T) {
	db := pgtest.New(t)
	st := store.New(db.Pool, db.Pool)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	bus := notify.New(db.Pool, "test", 1, log)
	svc := api.New(st, kinds.New(st, bus, log), bus, members.New(st, bus, store.Member{ID: "test"}, nil, log), log)
	grant, err := authz.ParseGrant("writer:team-a-*=team:team-a")
	if err != nil {
		t.Fatal(err)
	}
	policy, err := authz.New(grant, authz.WithRole(authz.RoleAdmin, "ops"), authz.WithTeam("team-a", "alice"),
		authz.WithTokens(map[string]string{"tok-ops": "ops", "tok-alice": "alice"}))
	if err != nil {
		t.Fatal(err)
	}
	validator, err := rpcvalidate.New()
	if err != nil {
		t.Fatal(err)
	}
	_, url := testkit.ServeControl(t, svc, connect.WithInterceptors(validator, svc.Authorizer(policy)))
	client := func(tok string) convergev1connect.ControlServiceClient {
		return convergev1connect.NewControlServiceClient(&http.Client{Transport: bearerTransport{tok, testkit.H2C().Transport}}, url)
	}
	ctx := context.Background()
	admin, alice := client("tok-ops"), client("tok-alice")
	for _, m := range []string{
		`{"kind": "stack", "kind_version": 1, "spec_schema": {"type": "object"},
		  "reactions": [{"name": "compose", "trigger": "specChange", "emits": ["children", "edges", "status"]}]}`,
		`{"kind": "site", "kind_version": 1, "spec_schema": {"type": "object"},
		  "reactions": [{"name": "run", "trigger": "specChange", "emits": ["status"]}]}`,
	} {
		k := &convergev1.KindManifest{}
		if err := protojson.Unmarshal([]byte(m), k); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: k}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Namespace: "team-b", Kind: "site", KindVersion: 1, Name: "db"}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Namespace: "team-a-1", Kind: "stack", KindVersion: 1, Name: "s"}); err != nil {
		t.Fatal(err)
	}
	got, err := st.Claim(ctx, "m1", time.Minute, []store.Want{{Kind: "stack", Version: 1, Trigger: trigger.SpecChange, N: 1}})
	if err != nil || len(got) != 1 {
		t.Fatalf("claim = %v, %v", got, err)
	}
	site, err := st.GetKind(ctx, "site", 1)
	if err != nil {
		t.Fatal(err)
	}
	db2 := store.Ref{Namespace: "team-b", Kind: "site", Name: "db"}
	res, err := st.ApplyComposition(ctx, store.Composition{
		Outcome: store.Outcome{Lease: got[0].Lease, Actor: "worker:w", Status: []byte(`{}`)},
		Children: []store.ChildSpec{{Kind: "site", Version: 1, Name: "s-web", Labels: []byte(`{}`),
			Spec: []byte(`{}`), KindRevision: site.Revision}},
		Edges:      []store.EdgeSpec{{Dependent: store.Ref{Kind: "site", Name: "s-web"}, Dependency: db2, Flows: []byte(`[]`)}},
		References: []store.Ref{db2},
	})
	if err != nil || !res.Applied {
		t.Fatalf("compose = %+v, %v", res, err)
	}

	graphOf := func(c convergev1connect.ControlServiceClient) *convergev1.GraphNode {
		t.Helper()
		g, err := c.GetResourceGraph(ctx, &convergev1.GetResourceGraphRequest{Namespace: "team-a-1", Kind: "stack", Name: "s"})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range g.GetNodes() {
			if n.GetResource().GetNamespace() == "team-b" {
				return n
			}
		}
		t.Fatalf("the graph has no node for team-b/site/db: %v", g.GetNodes())
		return nil
	}
	if n := graphOf(admin); n.GetPhase() == "" || !n.GetExternal() {
		t.Errorf("admin's graph: team-b/site/db %v, want its phase, external", n)
	}
	if n := graphOf(alice); n.GetPhase() != "" || n.GetMessage() != "" || n.GetResource().GetName() != "db" {
		t.Errorf("alice's graph: team-b/site/db %v, want it named without state", n)
	}

	explain := func(c convergev1connect.ControlServiceClient) *convergev1.Cause {
		t.Helper()
		e, err := c.ExplainResource(ctx, &convergev1.ExplainResourceRequest{Namespace: "team-a-1", Kind: "site", Name: "s-web"})
		if err != nil || len(e.GetCauses()) != 1 {
			t.Fatalf("explain: %v, %v", e, err)
		}
		return e.GetCauses()[0]
	}
	if c := explain(admin); c.GetReason() == api.ReasonNotReadable || c.GetResource().GetName() != "db" {
		t.Errorf("admin's explain: %v, want db's own cause", c)
	}
	if c := explain(alice); c.GetReason() != api.ReasonNotReadable || c.GetPhase() != "" || c.GetResource().GetNamespace() != "team-b" {
		t.Errorf("alice's explain: %v, want NotReadable naming team-b/site/db", c)
	}
}
