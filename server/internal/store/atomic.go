package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

type atomicKey struct{}

// Atomic runs fn with a context under which every Store call runs in one
// transaction, committed when fn returns nil and rolled back otherwise:
// several writes that must happen together or not at all (a rollout's
// step and the applies it makes) are each made by their own Store method.
// Under a dry run it runs in the dry run's transaction (a savepoint), so
// nothing is committed then either. The context must be used by one
// goroutine at a time.
func (s *Store) Atomic(ctx context.Context, fn func(ctx context.Context) error) error {
	return pgx.BeginFunc(ctx, s.db(ctx), func(tx pgx.Tx) error {
		if InDryRun(ctx) {
			return fn(context.WithValue(ctx, dryRunKey{}, tx))
		}
		return fn(context.WithValue(ctx, atomicKey{}, tx))
	})
}
