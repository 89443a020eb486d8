package store_test

import (
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/store"
)

// TestPreviewsClaimAnswerAndLeave: a preview's id never collides with a
// task's (they start at 2^62); only a broker serving its reaction claims
// it, once, and not after it expired; an unclaimed one can be claimed
// again; the answer comes back to the ids that asked, and deleting them
// leaves nothing.
func TestPreviewsClaimAnswerAndLeave(t *testing.T) {
	s, ctx := newStore(t)
	compose := store.Reaction{Kind: "stack", Version: 1, Reaction: "compose"}
	other := store.Reaction{Kind: "other", Version: 1, Reaction: "compose"}
	ids, err := s.SubmitPreviews(ctx, []store.PreviewRequest{
		{Reaction: compose, Task: []byte("a"), Expires: time.Now().Add(time.Minute)},
		{Reaction: compose, Task: []byte("b"), Expires: time.Now().Add(-time.Second)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || ids[0] < store.FirstPreviewID || ids[1] <= ids[0] {
		t.Fatalf("preview ids %v; want two, in order, from 2^62", ids)
	}
	if got, err := s.ClaimPreviews(ctx, "m2", []store.Reaction{other}, 10); err != nil || len(got) != 0 {
		t.Fatalf("a broker serving another reaction claimed %v (%v)", got, err)
	}
	got, err := s.ClaimPreviews(ctx, "m1", []store.Reaction{compose}, 10)
	if err != nil || len(got) != 1 || got[0].ID != ids[0] || string(got[0].Task) != "a" {
		t.Fatalf("claim = %v (%v); want the unexpired preview only", got, err)
	}
	if again, _ := s.ClaimPreviews(ctx, "m2", []store.Reaction{compose}, 10); len(again) != 0 {
		t.Fatalf("a claimed preview was claimed again: %v", again)
	}
	if err := s.UnclaimPreviews(ctx, []int64{ids[0]}); err != nil {
		t.Fatal(err)
	}
	if again, _ := s.ClaimPreviews(ctx, "m2", []store.Reaction{compose}, 10); len(again) != 1 {
		t.Fatalf("a preview given back was not claimable: %v", again)
	}
	if answers, _ := s.PreviewAnswers(ctx, ids); len(answers) != 0 {
		t.Fatalf("answers before any: %v", answers)
	}
	if err := s.AnswerPreview(ctx, store.PreviewAnswer{ID: ids[0], Worker: "w", Result: []byte("r")}); err != nil {
		t.Fatal(err)
	}
	answers, err := s.PreviewAnswers(ctx, ids)
	if err != nil || len(answers) != 1 || answers[0].Worker != "w" || string(answers[0].Result) != "r" || answers[0].Error != "" {
		t.Fatalf("answers = %v (%v)", answers, err)
	}
	if err := s.DeletePreviews(ctx, ids); err != nil {
		t.Fatal(err)
	}
	if answers, _ := s.PreviewAnswers(ctx, ids); len(answers) != 0 {
		t.Fatalf("answers after the delete: %v", answers)
	}
}
