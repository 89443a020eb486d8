package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/store"
)

func TestRetryStaleKind(t *testing.T) {
	db := pgtest.New(t)
	st := store.New(db.Pool, db.Pool)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	bus := notify.New(db.Pool, "test", 1, log)
	s := &Service{store: st, kinds: kinds.New(st, bus, log), bus: bus, log: log}
	ctx := context.Background()
	stale := fmt.Errorf("%w: kind db v1 changed", store.ErrStaleKind)
	other := errors.New("other")

	// answers lists what write returns on each call; firsts records the
	// first flag of each call.
	run := func(answers ...error) ([]bool, error) {
		var firsts []bool
		err := s.retryStaleKind(ctx, func(first bool) error {
			firsts = append(firsts, first)
			if len(firsts) > len(answers) {
				t.Fatalf("write called %d times, want at most %d", len(firsts), len(answers))
			}
			return answers[len(firsts)-1]
		})
		return firsts, err
	}

	if firsts, err := run(nil); err != nil || len(firsts) != 1 || !firsts[0] {
		t.Errorf("success: calls %v, error %v; want one first call and nil", firsts, err)
	}
	if firsts, err := run(other); err != other || len(firsts) != 1 {
		t.Errorf("other error: calls %v, error %v; want one call and the error as returned", firsts, err)
	}
	if firsts, err := run(stale, nil); err != nil || len(firsts) != 2 || !firsts[0] || firsts[1] {
		t.Errorf("stale once: calls %v, error %v; want calls [true false] and nil", firsts, err)
	}
	if firsts, err := run(stale, other); err != other || len(firsts) != 2 {
		t.Errorf("stale then other: calls %v, error %v; want two calls and the second error", firsts, err)
	}
	firsts, err := run(stale, stale)
	if connect.CodeOf(err) != connect.CodeAborted || !strings.Contains(err.Error(), "kind db v1 changed; retry the request") || len(firsts) != 2 {
		t.Errorf("stale twice: calls %v, error %v; want two calls and Aborted asking to retry", firsts, err)
	}
}
