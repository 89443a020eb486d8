package reactor

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/labels"
	"github.com/convergehq/converge/server/internal/store"
)

func phase(p string) *string { return &p }

func TestTransitionsOf(t *testing.T) {
	cases := []struct {
		name   string
		change store.Change
		want   []string
	}{
		{"created", store.Change{Type: "created", Phase: "Reconciling"}, []string{Created}},
		{"created ready", store.Change{Type: "created", Phase: "Ready"}, []string{Created, Synced}},
		{"synced", store.Change{Type: "updated", Phase: "Ready", PreviousPhase: phase("Reconciling")}, []string{Synced}},
		{"still ready", store.Change{Type: "updated", Phase: "Ready", PreviousPhase: phase("Ready")}, nil},
		{"degraded", store.Change{Type: "updated", Phase: "Degraded", PreviousPhase: phase("Ready")}, []string{Degraded}},
		{"failed", store.Change{Type: "updated", Phase: "Failed", PreviousPhase: phase("Reconciling")}, []string{Failed}},
		{"still failed", store.Change{Type: "updated", Phase: "Failed", PreviousPhase: phase("Failed")}, nil},
		{"reconciling", store.Change{Type: "updated", Phase: "Reconciling", PreviousPhase: phase("Ready")}, nil},
		{"deleting", store.Change{Type: "updated", Phase: "Deleting", PreviousPhase: phase("Ready")}, nil},
		{"deleted", store.Change{Type: "deleted", Phase: "Ready", PreviousPhase: phase("Ready")}, []string{Deleted}},
	}
	for _, c := range cases {
		if got := transitionsOf(c.change); !slices.Equal(got, c.want) {
			t.Errorf("%s: transitions = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestSelectorMatches(t *testing.T) {
	l := map[string]string{"env": "prod", "team": "db"}
	cases := map[string]bool{
		"":                     true,
		"env=prod":             true,
		"env==dev":             false,
		"env!=dev":             true,
		"absent!=x":            true,
		"team":                 true,
		"!team":                false,
		"!absent":              true,
		"env in (dev, prod)":   true,
		"env in (dev)":         false,
		"absent in (x)":        false,
		"env notin (dev)":      true,
		"env notin (prod)":     false,
		"absent notin (x)":     true,
		"env=prod,team=db":     true,
		"env=prod,team=search": false,
	}
	for sel, want := range cases {
		parsed, err := labels.Parse(sel)
		if err != nil {
			t.Fatalf("Parse(%q): %v", sel, err)
		}
		if got := matches(parsed, l); got != want {
			t.Errorf("%q on %v = %v, want %v", sel, l, got, want)
		}
	}
}

func TestMatchBuildsDeliveries(t *testing.T) {
	created := time.Now()
	bs, bad := compile([]store.ReactorBinding{
		{Name: "all", WatchKind: "db", Transitions: []string{Created, Deleted}, ReactorKind: "pager", ReactorKindVersion: 2, CreatedAt: created},
		{Name: "prod", WatchKind: "db", WatchKindVersion: 1, Transitions: []string{Created}, LabelSelector: "env=prod",
			ReactorKind: "pager", ReactorKindVersion: 1, CreatedAt: created},
		{Name: "off", WatchKind: "db", Transitions: []string{Created}, ReactorKind: "pager", ReactorKindVersion: 1, Disabled: true},
		{Name: "broken", WatchKind: "db", Transitions: []string{Created}, LabelSelector: "a in b", ReactorKind: "pager", ReactorKindVersion: 1, Revision: 3},
	})
	if len(bs) != 2 || len(bad) != 1 || bad[0].name != "broken" || bad[0].revision != 3 {
		t.Fatalf("compiled %d bindings, bad %+v", len(bs), bad)
	}
	at := created.Add(time.Second)
	changes := []store.WatchedChange{
		{Change: store.Change{ResourceID: 7, Type: "created", Namespace: "ns", Kind: "db", KindVersion: 1, Name: "orders",
			Phase: "Reconciling", Generation: 1, ResourceVersion: 1, At: at},
			Exists: true, Labels: []byte(`{"env":"prod"}`)},
		{Change: store.Change{ResourceID: 8, Type: "created", Kind: "db", KindVersion: 2, Name: "v2", ResourceVersion: 1, At: at},
			Exists: true, Labels: []byte(`{"env":"prod"}`)},
		{Change: store.Change{ResourceID: 9, Type: "created", Kind: "db", KindVersion: 1, Name: "old", ResourceVersion: 1,
			At: created.Add(-time.Second)}, Exists: true, Labels: []byte(`{}`)},
		{Change: store.Change{ResourceID: 7, Type: "deleted", Namespace: "ns", Kind: "db", KindVersion: 1, Name: "orders",
			Phase: "Ready", ResourceVersion: 5, At: at}},
		{Change: store.Change{ResourceID: 10, Type: "created", Kind: "cache", KindVersion: 1, Name: "x", At: at}, Exists: true},
	}
	ds, err := match(bs, changes)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, d := range ds {
		keys = append(keys, d.Key)
	}
	want := []string{"all/7/created/1", "prod/7/created/1", "all/8/created/1", "all/7/deleted/5"}
	if !slices.Equal(keys, want) {
		t.Fatalf("keys = %v, want %v", keys, want)
	}
	if d := ds[1]; d.ResourceID != 7 || d.ReactorKind != "pager" || d.ReactorKindVersion != 1 || !d.WithStatus {
		t.Fatalf("delivery = %+v", d)
	}
	if ds[3].WithStatus {
		t.Fatal("a deleted resource's delivery asks for its status")
	}
	var p Payload
	if err := json.Unmarshal(ds[0].Payload, &p); err != nil {
		t.Fatal(err)
	}
	if p.Binding != "all" || p.Transition != Created || p.Watched != (Watched{Namespace: "ns", Kind: "db", Name: "orders", UID: "7"}) ||
		p.WatchedKindVersion != 1 || p.WatchedGeneration != 1 || p.WatchedPhase != "Reconciling" {
		t.Fatalf("payload = %+v", p)
	}
	var gone map[string]any
	if err := json.Unmarshal(ds[3].Payload, &gone); err != nil {
		t.Fatal(err)
	}
	if v, ok := gone["watched_status"]; !ok || v != nil {
		t.Fatalf("a deleted resource's payload = %s; want watched_status null", ds[3].Payload)
	}
}
