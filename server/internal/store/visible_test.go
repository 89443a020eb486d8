package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/store"
)

// TestVisibleNamespaces: the visibility predicate matches namespace names
// literally ('_' and '%' are not wildcards), '*' only as a trailing
// prefix wildcard, and kinds in every namespace; and lists, counts,
// events and the change feed all apply it.
func TestVisibleNamespaces(t *testing.T) {
	s, ctx := newStore(t)
	from, err := s.CurrentCursor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	revs := map[string]int64{"leaf": applyKind(t, s, "leaf", store.Policy{}), "other": applyKind(t, s, "other", store.Policy{})}
	all := []string{"team_a", "teamxa", "t%z", "tqz", "team-a-1", "team-b"}
	var in []store.ApplyInput
	for _, ns := range all {
		in = append(in, store.ApplyInput{Namespace: ns, Kind: "leaf", KindVersion: 1, Name: "r",
			Labels: []byte(`{}`), Spec: []byte(`{}`), KindRevision: revs["leaf"]})
	}
	in = append(in, store.ApplyInput{Namespace: "team-b", Kind: "other", KindVersion: 1, Name: "o",
		Labels: []byte(`{}`), Spec: []byte(`{}`), KindRevision: revs["other"]})
	if _, _, err := s.ApplyResources(ctx, "test", in); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordKindEvent(ctx, "leaf", 1, "ApplyKind", "manifest", "test"); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name string
		v    *store.Visible
		want []string // namespace/kind, sorted
	}{
		{"everything", nil, []string{"t%z/leaf", "team-a-1/leaf", "team-b/leaf", "team-b/other", "team_a/leaf", "teamxa/leaf", "tqz/leaf"}},
		{"underscore is literal", &store.Visible{Namespaces: []string{"team_a"}}, []string{"team_a/leaf"}},
		{"percent is literal", &store.Visible{Namespaces: []string{"t%*"}}, []string{"t%z/leaf"}},
		{"prefix", &store.Visible{Namespaces: []string{"team-a-*"}}, []string{"team-a-1/leaf"}},
		{"kind everywhere", &store.Visible{Namespaces: []string{"team-a-*"}, Kinds: []string{"other"}}, []string{"team-a-1/leaf", "team-b/other"}},
		{"nothing", &store.Visible{}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows, _, err := s.ListResources(ctx, store.ListFilter{Visible: c.v, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rows {
				got = append(got, r.Namespace+"/"+r.Kind)
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Fatalf("list: %v, want %v", got, c.want)
			}
			counts, err := s.CountResources(ctx, store.ListFilter{Visible: c.v})
			if err != nil {
				t.Fatal(err)
			}
			var n int64
			for _, k := range counts {
				n += k
			}
			if n != int64(len(c.want)) {
				t.Fatalf("count: %d, want %d", n, len(c.want))
			}

			events, err := s.ListEvents(ctx, store.EventFilter{Visible: c.v, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			kindEvent := false
			for _, e := range events {
				if e.Namespace == "" {
					kindEvent = true
					continue
				}
				seen[e.Namespace+"/"+e.Kind] = true
			}
			if !kindEvent {
				t.Error("events: the kind event (no namespace) is missing; every reader sees kind events")
			}
			if got := sortedKeys(seen); !slices.Equal(got, c.want) {
				t.Fatalf("events: %v, want %v", got, c.want)
			}

			// The feed shows committed changes once no older transaction
			// runs; poll until every resource's change is there.
			deadline := time.Now().Add(10 * time.Second)
			for {
				changes, _, err := s.ReadChanges(ctx, from, store.ChangeFilter{Visible: c.v}, 1000)
				if err != nil {
					t.Fatal(err)
				}
				fed := map[string]bool{}
				for _, ch := range changes {
					fed[ch.Namespace+"/"+ch.Kind] = true
				}
				got := sortedKeys(fed)
				if slices.Equal(got, c.want) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("changes: %v, want %v", got, c.want)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
