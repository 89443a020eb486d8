package store_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/convergehq/converge/server/internal/store"
)

// The first revision and the Created event of a created resource are read
// from its row; these tests hold them to what stored rows showed.

// storedRows counts the stored revisions (each test has a database of
// its own) and the stored Created events of name.
func storedRows(t *testing.T, s *store.Store, name string) (revisions, created int) {
	t.Helper()
	err := s.Pool().QueryRow(context.Background(), `
		SELECT (SELECT count(*) FROM spec_revisions),
		       (SELECT count(*) FROM events WHERE name = $1 AND reason = 'Created')`, name).Scan(&revisions, &created)
	if err != nil {
		t.Fatal(err)
	}
	return revisions, created
}

func listEvents(t *testing.T, s *store.Store, f store.EventFilter) []store.Event {
	t.Helper()
	evs, err := s.ListEvents(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// createdOf returns the Created events among evs.
func createdOf(evs []store.Event) []store.Event {
	var out []store.Event
	for _, e := range evs {
		if e.Reason == "Created" {
			out = append(out, e)
		}
	}
	return out
}

func TestFirstRevisionFromTheRow(t *testing.T) {
	s, _ := newStore(t)
	rev := cfgKind(t, s, "leaf", 1, store.Policy{})
	res := histApply(t, s, "alice", "leaf", 1, rev, "a", `{"n":1}`)
	if got := histAll(t, s, "leaf", "a"); len(got) != 1 || got[0] != `1:v1:apply:alice:{"n": 1}` {
		t.Fatalf("history after the create = %v", got)
	}
	if revs, created := storedRows(t, s, "a"); revs != 0 || created != 0 {
		t.Fatalf("a create stored %d revisions and %d Created events, want none", revs, created)
	}
	before := createdOf(listEvents(t, s, store.EventFilter{Name: "a"}))
	if len(before) != 1 || before[0].ResourceID != res.ID || before[0].Generation != 1 || before[0].Actor != "alice" ||
		before[0].Message != "created at leaf v1" || before[0].Type != "Normal" || before[0].At.IsZero() {
		t.Fatalf("Created event after the create = %+v", before)
	}
	page, err := s.ResourceHistory(context.Background(), histKey("leaf", "a"), 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	first := page.Revisions[0]

	histApply(t, s, "bob", "leaf", 1, rev, "a", `{"n":2}`)
	got := histAll(t, s, "leaf", "a")
	if len(got) != 2 || got[0] != `2:v1:apply:bob:{"n": 2}` || got[1] != `1:v1:apply:alice:{"n": 1}` {
		t.Fatalf("history after an update = %v", got)
	}
	page, err = s.ResourceHistory(context.Background(), histKey("leaf", "a"), 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(page.Revisions[1], first) {
		t.Fatalf("revision 1 read from the row %+v, stored %+v", first, page.Revisions[1])
	}
	if revs, created := storedRows(t, s, "a"); revs != 1 || created != 1 {
		t.Fatalf("after an update %d revisions and %d Created events stored, want 1 and 1", revs, created)
	}
	after := createdOf(listEvents(t, s, store.EventFilter{Name: "a"}))
	if !reflect.DeepEqual(after, before) {
		t.Fatalf("Created event read from the row %+v, stored %+v", before, after)
	}
	// Paging from generation 2 reaches the stored revision 1.
	page, err = s.ResourceHistory(context.Background(), histKey("leaf", "a"), 2, 10)
	if err != nil || len(page.Revisions) != 1 || !reflect.DeepEqual(page.Revisions[0], first) {
		t.Fatalf("history before generation 2 = %+v, %v", page, err)
	}
	// Rolling back to the first generation reads the stored revision.
	if changed, err := histRollback(s, "leaf", "a", 1, map[int32]int64{1: rev}); err != nil || !changed {
		t.Fatalf("rollback to generation 1: %v, %v", changed, err)
	}
	if got := histAll(t, s, "leaf", "a"); len(got) != 3 || got[0] != `3:v1:rollback:api:op:{"n": 1}` {
		t.Fatalf("history after the rollback = %v", got)
	}
	// Rolling back to the current generation changes nothing.
	if changed, err := histRollback(s, "leaf", "a", 3, map[int32]int64{1: rev}); err != nil || changed {
		t.Fatalf("rollback to the current generation: %v, %v", changed, err)
	}
}

func TestCreatedEventOrderAndPaging(t *testing.T) {
	s, ctx := newStore(t)
	rev := cfgKind(t, s, "leaf", 1, store.Policy{})
	other := cfgKind(t, s, "other", 1, store.Policy{})
	// Stored and derived events interleave: kind events between creates,
	// a create in one batch with an update, and a create later updated.
	var want []string
	step := func(what string, fn func()) {
		fn()
		want = append(want, what)
	}
	step("Created default/leaf/a", func() { histApply(t, s, "alice", "leaf", 1, rev, "a", `{}`) })
	step("KindNote /leaf/v1", func() {
		if err := s.RecordKindEvent(ctx, "leaf", 1, "KindNote", "n", "op"); err != nil {
			t.Fatal(err)
		}
	})
	step("Created default/other/b", func() { histApply(t, s, "alice", "other", 1, other, "b", `{}`) })
	step("Created team/leaf/c", func() {
		if _, _, err := s.ApplyResources(ctx, "carol", []store.ApplyInput{
			{Namespace: "team", Kind: "leaf", KindVersion: 1, Name: "c", Labels: []byte(`{}`), Spec: []byte(`{}`), KindRevision: rev},
		}); err != nil {
			t.Fatal(err)
		}
	})
	step("KindNote /other/v1", func() {
		if err := s.RecordKindEvent(ctx, "other", 1, "KindNote", "n", "op"); err != nil {
			t.Fatal(err)
		}
	})
	step("Created default/leaf/d", func() { histApply(t, s, "alice", "leaf", 1, rev, "d", `{}`) })
	// b's Created event is stored now, under the id it was listed with.
	histApply(t, s, "alice", "other", 1, other, "b", `{"x":1}`)

	show := func(evs []store.Event) []string {
		var out []string
		for _, e := range evs {
			if e.Reason == "Created" || e.Reason == "KindNote" {
				out = append([]string{fmt.Sprintf("%s %s/%s/%s", e.Reason, e.Namespace, e.Kind, e.Name)}, out...)
			}
		}
		return out
	}
	all := listEvents(t, s, store.EventFilter{Limit: 1000})
	for i := 1; i < len(all); i++ {
		if all[i].ID >= all[i-1].ID {
			t.Fatalf("events not newest first by id: %d then %d", all[i-1].ID, all[i].ID)
		}
	}
	if got := show(all); !reflect.DeepEqual(got, want) {
		t.Fatalf("events oldest first = %v, want %v", got, want)
	}
	// Paging one at a time walks the same list.
	var paged []store.Event
	for before := int64(0); ; {
		page := listEvents(t, s, store.EventFilter{BeforeID: before, Limit: 1})
		if len(page) == 0 {
			break
		}
		paged = append(paged, page...)
		before = page[0].ID
	}
	if !reflect.DeepEqual(paged, all) {
		t.Fatalf("paged one by one:\n%+v\nlisted at once:\n%+v", paged, all)
	}
	// A page of two across stored and derived events.
	if got := show(listEvents(t, s, store.EventFilter{BeforeID: all[1].ID, Limit: 2})); len(got) != 2 {
		t.Fatalf("a page of two = %v", got)
	}

	filters := []struct {
		f    store.EventFilter
		want []string
	}{
		{store.EventFilter{Kind: "leaf"}, []string{"Created default/leaf/a", "KindNote /leaf/v1", "Created team/leaf/c", "Created default/leaf/d"}},
		{store.EventFilter{Namespace: "team"}, []string{"KindNote /leaf/v1", "Created team/leaf/c", "KindNote /other/v1"}},
		{store.EventFilter{Name: "d"}, []string{"Created default/leaf/d"}},
		{store.EventFilter{Visible: &store.Visible{Namespaces: []string{"te*"}}},
			[]string{"KindNote /leaf/v1", "Created team/leaf/c", "KindNote /other/v1"}},
		{store.EventFilter{Visible: &store.Visible{Kinds: []string{"other"}}},
			[]string{"KindNote /leaf/v1", "Created default/other/b", "KindNote /other/v1"}},
	}
	for _, c := range filters {
		c.f.Limit = 1000
		if got := show(listEvents(t, s, c.f)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("events with %+v = %v, want %v", c.f, got, c.want)
		}
	}
}

func TestDeleteAndCreateAgain(t *testing.T) {
	s, ctx := newStore(t)
	rev := cfgKind(t, s, "leaf", 1, store.Policy{})
	key := histKey("leaf", "a")
	old := histApply(t, s, "alice", "leaf", 1, rev, "a", `{"old":1}`)
	oldCreated := createdOf(listEvents(t, s, store.EventFilter{Name: "a"}))
	if _, gone, err := s.DeleteResource(ctx, "alice", key, store.TeardownPolicy{}); err != nil || !gone {
		t.Fatalf("delete: %v, %v", gone, err)
	}
	// The deleted resource's Created event stays, stored at its delete.
	if _, created := storedRows(t, s, "a"); created != 1 {
		t.Fatalf("%d Created events stored after the delete, want 1", created)
	}
	if got := createdOf(listEvents(t, s, store.EventFilter{Name: "a"})); !reflect.DeepEqual(got, oldCreated) {
		t.Fatalf("Created event after the delete = %+v, before %+v", got, oldCreated)
	}

	fresh := histApply(t, s, "bob", "leaf", 1, rev, "a", `{"new":1}`)
	if fresh.ID == old.ID {
		t.Fatalf("the new resource has the old id %d", old.ID)
	}
	if got := histAll(t, s, "leaf", "a"); len(got) != 1 || got[0] != `1:v1:apply:bob:{"new": 1}` {
		t.Fatalf("history of the new resource = %v", got)
	}
	created := createdOf(listEvents(t, s, store.EventFilter{Name: "a"}))
	if len(created) != 2 || created[0].ResourceID != fresh.ID || created[0].Actor != "bob" ||
		!reflect.DeepEqual(created[1], oldCreated[0]) || created[0].ID <= created[1].ID {
		t.Fatalf("Created events after the create again = %+v (the old one %+v)", created, oldCreated)
	}
	if _, gone, err := s.DeleteResource(ctx, "bob", key, store.TeardownPolicy{}); err != nil || !gone {
		t.Fatalf("delete again: %v, %v", gone, err)
	}
	if revs, created := storedRows(t, s, "a"); revs != 0 || created != 2 {
		t.Fatalf("after two deletes %d revisions and %d Created events stored, want 0 and 2", revs, created)
	}
}
