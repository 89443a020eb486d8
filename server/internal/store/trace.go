package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/convergehq/converge/server/internal/tracing"
)

// joinTrace makes the work a transaction queues join the trace of ctx's
// span: tasks.traceparent defaults to the transaction's
// converge.traceparent setting (migrations/00006_task_traceparent.sql).
// It costs a statement only when the span is sampled.
func joinTrace(ctx context.Context, tx pgx.Tx) error {
	tp := tracing.TraceParent(ctx)
	if tp == "" {
		return nil
	}
	_, err := tx.Exec(ctx, `SELECT set_config('converge.traceparent', $1, true)`, tp)
	return err
}
