package store

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// readFromKey carries the pool a read-only request's statements run on.
type readFromKey struct{}

// ReadingFrom returns a context under which Store calls run their
// statements on pool instead of the Store's own pools, unless a
// transaction under the context takes them (a dry run, InOneTransaction).
// It is for read-only requests served by a streaming replica (package
// readroute decides which): a write under it fails, since a standby
// refuses writes.
func ReadingFrom(ctx context.Context, pool *pgxpool.Pool) context.Context {
	return context.WithValue(ctx, readFromKey{}, pool)
}

// readPool is the pool ReadingFrom set on ctx, or nil.
func readPool(ctx context.Context) *pgxpool.Pool {
	p, _ := ctx.Value(readFromKey{}).(*pgxpool.Pool)
	return p
}
