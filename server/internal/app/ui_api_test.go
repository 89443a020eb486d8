package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/testkit"
)

// TestWhoAmI: the caller, its roles and teams as the policy sees them.
func TestWhoAmI(t *testing.T) {
	_, client := authzServer(t)
	ctx := context.Background()
	for _, c := range []struct {
		token, identity string
		roles, teams    []string
	}{
		{"tok-admin", adminIdent, []string{"admin"}, nil},
		{"tok-carol", carolIdent, nil, []string{"data-platform"}},
		{"tok-read", readIdent, []string{"reader"}, nil},
	} {
		res, err := client(c.token).WhoAmI(ctx, &convergev1.WhoAmIRequest{})
		if err != nil {
			t.Fatalf("%s: %v", c.token, err)
		}
		if res.GetIdentity() != c.identity || !res.GetAuthorizationEnabled() ||
			!slices.Equal(res.GetRoles(), c.roles) || !slices.Equal(res.GetTeams(), c.teams) {
			t.Errorf("%s: %v, want %s roles %v teams %v", c.token, res, c.identity, c.roles, c.teams)
		}
	}
	if _, err := client("").WhoAmI(ctx, &convergev1.WhoAmIRequest{}); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("anonymous: %v, want PermissionDenied", err)
	}

	_, ctl, _ := server(t)
	res, err := ctl.WhoAmI(ctx, &convergev1.WhoAmIRequest{})
	if err != nil || res.GetAuthorizationEnabled() || res.GetIdentity() != "" {
		t.Errorf("without a policy: %v, %v; want authorization disabled, no identity", res, err)
	}
}

// TestGetCluster: this replica, with its connected worker's reaction and
// its tile of every shard.
func TestGetCluster(t *testing.T) {
	_, ctl, wrk := server(t)
	applyGreeting(t, ctl)
	connectWorker(t, wrk, 4)
	greeting := func(s *convergev1.ServedReaction) bool {
		return s.GetKind() == "greeting" && s.GetReaction() == "reconcile" && s.GetWorkers() == 1
	}
	m := testkit.Poll(t, "the member to serve greeting/reconcile with one worker", func() *convergev1.ClusterMember {
		res, err := ctl.GetCluster(context.Background(), &convergev1.GetClusterRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if res.GetShards() != 256 || len(res.GetMembers()) != 1 {
			t.Fatalf("cluster %v: want 256 shards and one member", res)
		}
		return res.GetMembers()[0]
	}, func(m *convergev1.ClusterMember) bool { return slices.ContainsFunc(m.GetServed(), greeting) })
	s := m.GetServed()[slices.IndexFunc(m.GetServed(), greeting)]
	if s.GetCapacity() != 4 || s.GetShardLo() != 0 || s.GetShardHi() != 256 || m.GetId() == "" || m.GetHeartbeatAt() == nil {
		t.Fatalf("served %v of member %v: want capacity 4, shards [0, 256)", s, m)
	}
}

// TestCountResourcesOverREST: counts by phase, filtered by kind.
func TestCountResourcesOverREST(t *testing.T) {
	base, ctl, _ := server(t)
	applyGreeting(t, ctl)
	applyResource(t, ctl, "a", map[string]any{"name": "a"})
	applyResource(t, ctl, "b", map[string]any{"name": "b"})
	get := func(query string) map[string]any {
		t.Helper()
		resp, err := http.Get(base + "/api/v1/resourcecounts" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", query, resp.StatusCode, body)
		}
		var out map[string]any
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatalf("%s: %v in %s", query, err, body)
		}
		return out
	}
	got := get("?kind=greeting")
	if phases, _ := got["phases"].(map[string]any); phases["Reconciling"] != "2" || got["total"] != "2" {
		t.Fatalf("kind greeting: %v, want 2 Reconciling", got)
	}
	if got := get("?kind=other"); got["total"] != nil && got["total"] != "0" {
		t.Fatalf("kind other: %v, want none", got)
	}
	resp, err := http.Get(base + "/api/v1/resourcecounts?label_selector=" + "%3D%3D")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "label_selector") {
		t.Fatalf("bad selector: %d %s, want 400 naming label_selector", resp.StatusCode, body)
	}
}

// TestUIIsServed: the UI answers at / and on its own routes, and the API
// keeps its paths.
func TestUIIsServed(t *testing.T) {
	base, _, _ := server(t)
	for _, path := range []string{"/", "/resources/default/greeting/a", "/app.js"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(body) == 0 {
			t.Errorf("GET %s: %d, %d bytes", path, resp.StatusCode, len(body))
		}
	}
	resp, err := http.Get(base + "/api/v1/kinds")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.Contains(string(body), "<html") {
		t.Errorf("GET /api/v1/kinds: %d %.100s, want the API's answer", resp.StatusCode, body)
	}
	resp, err = http.Post(base+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d, want 405", resp.StatusCode)
	}
}
