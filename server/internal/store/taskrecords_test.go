package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/store"
)

func taskRec(resource int64, n int) store.TaskRecord {
	at := time.Date(2026, 1, 1, 0, 0, n, 0, time.UTC)
	return store.TaskRecord{ResourceID: resource, TaskID: int64(n), Trigger: "specChange", Generation: int64(n),
		Attempt: 1, Worker: "w", Session: "s", ClaimedAt: at, EndedAt: at.Add(time.Second), Outcome: store.RecordApplied,
		Failed: n%2 == 0, Error: fmt.Sprintf("err %d", n), Input: []byte(fmt.Sprintf(`{"spec":{"n":%d}}`, n)),
		Result: []byte(`{}`)}
}

func TestTaskRecordsKeepPageAndDelete(t *testing.T) {
	s, ctx := newStore(t)
	rev := cfgKind(t, s, "leaf", 1, store.Policy{})
	a := histApply(t, s, "alice", "leaf", 1, rev, "a", `{}`)
	b := histApply(t, s, "alice", "leaf", 1, rev, "b", `{}`)
	// Two batches, then a prune: a keeps its newest 3; b keeps its one;
	// the record of a resource that does not exist is removed.
	gone := a.ID + b.ID + 1000
	if err := s.WriteTaskRecords(ctx, []store.TaskRecord{taskRec(a.ID, 1), taskRec(a.ID, 2), taskRec(b.ID, 3)}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteTaskRecords(ctx, []store.TaskRecord{taskRec(a.ID, 4), taskRec(a.ID, 5), taskRec(gone, 6)}); err != nil {
		t.Fatal(err)
	}
	if err := s.PruneTaskRecords(ctx, []int64{a.ID, b.ID, gone}, 3); err != nil {
		t.Fatal(err)
	}
	page, err := s.ListTaskRecords(ctx, histKey("leaf", "a"), 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	var gens []int64
	for _, r := range page.Records {
		gens = append(gens, r.Generation)
		if r.Input != nil || r.Ref.Name != "a" || !r.DispatchedAt.IsZero() {
			t.Fatalf("list record = %+v, want no input, ref a, no dispatch time", r)
		}
	}
	if fmt.Sprint(gens) != "[5 4]" || !page.More {
		t.Fatalf("first page = %v more=%v, want [5 4] and more", gens, page.More)
	}
	next, err := s.ListTaskRecords(ctx, histKey("leaf", "a"), page.Records[1].ID, 10)
	if err != nil || len(next.Records) != 1 || next.Records[0].Generation != 2 || next.More {
		t.Fatalf("second page = %+v, %v; want only generation 2 (1 pruned)", next, err)
	}
	whole, err := s.GetTaskRecord(ctx, next.Records[0].ID)
	if err != nil || !strings.Contains(string(whole.Input), `"n":2`) || !whole.Failed || whole.Error != "err 2" {
		t.Fatalf("whole record = %+v (input %s), %v", whole, whole.Input, err)
	}
	var total int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM task_records`).Scan(&total); err != nil || total != 4 {
		t.Fatalf("stored records = %d, %v; want 3 of a and 1 of b", total, err)
	}
	if _, err := s.Pool().Exec(ctx, `DELETE FROM resources WHERE id = $1`, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM task_records`).Scan(&total); err != nil || total != 1 {
		t.Fatalf("stored records after deleting a = %d, %v; want b's only", total, err)
	}
	if _, err := s.GetTaskRecord(ctx, whole.ID); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("GetTaskRecord of a deleted resource's record: %v, want not found", err)
	}
	if _, err := s.ListTaskRecords(ctx, histKey("leaf", "nope"), 0, 10); err == nil || !strings.Contains(err.Error(), "leaf/nope not found") {
		t.Fatalf("ListTaskRecords of a missing resource: %v", err)
	}
}

// Every column copied in reads back as written (times to the
// microsecond PostgreSQL keeps).
func TestTaskRecordColumnsRoundTrip(t *testing.T) {
	s, ctx := newStore(t)
	rev := cfgKind(t, s, "leaf", 1, store.Policy{})
	a := histApply(t, s, "alice", "leaf", 1, rev, "a", `{}`)
	at := time.Date(2026, 12, 3, 12, 0, 0, 123456789, time.UTC)
	want := store.TaskRecord{ResourceID: a.ID, TaskID: 1 << 40, Trigger: "operation:ping", Generation: 7, Attempt: 3,
		Worker: "wörker", Session: "s-1", ClaimedAt: at, DispatchedAt: at.Add(time.Millisecond), EndedAt: at.Add(time.Second),
		Outcome: store.RecordDiscarded, DiscardReason: "Superseded: newer", Failed: true, Terminal: true,
		ErrorReason: "Quota", Error: "quota exceeded", Children: 12, Truncated: true, Input: []byte{1, 0, 0xff}, Result: nil}
	if err := s.WriteTaskRecords(ctx, []store.TaskRecord{want}); err != nil {
		t.Fatal(err)
	}
	page, err := s.ListTaskRecords(ctx, histKey("leaf", "a"), 0, 1)
	if err != nil || len(page.Records) != 1 {
		t.Fatalf("list = %+v, %v", page, err)
	}
	got, err := s.GetTaskRecord(ctx, page.Records[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	want.ID, want.Ref = got.ID, got.Ref
	want.ClaimedAt, want.DispatchedAt, want.EndedAt = at.Truncate(time.Microsecond),
		at.Add(time.Millisecond).Truncate(time.Microsecond), at.Add(time.Second).Truncate(time.Microsecond)
	want.Result = []byte{}
	for _, tm := range []*time.Time{&got.ClaimedAt, &got.DispatchedAt, &got.EndedAt} {
		*tm = tm.UTC()
	}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Fatalf("read back\n%+v\nwant\n%+v", got, want)
	}
}
