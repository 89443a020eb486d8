package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// taskRecordCopyColumns are the columns WriteTaskRecords copies, in the
// order appendTaskRecordRow writes them.
var taskRecordCopyColumns = []string{"resource_id", "task_id", "trigger", "generation", "attempt", "worker",
	"session", "claimed_at", "dispatched_at", "ended_at", "outcome", "discard_reason", "failed", "terminal",
	"error_reason", "error", "children", "truncated", "input", "result"}

var copyTaskRecordsSQL = `COPY task_records (` + strings.Join(taskRecordCopyColumns, ", ") + `) FROM STDIN (FORMAT binary)`

// WriteTaskRecords copies recs in, in order (ids grow with it). COPY
// costs the database a fraction of an INSERT of unnested arrays, and
// checks nothing: a record of a resource deleted a moment ago is removed
// by the next PruneTaskRecords that names it. Records are evidence, not
// state: they go through the relaxed pool.
//
// The rows are encoded here in PostgreSQL's binary COPY format, every
// column's type known: pgx's generic CopyFrom looks up an encoding for
// each value of each row, which cost the writer more than the rest of a
// record together.
func (s *Store) WriteTaskRecords(ctx context.Context, recs []TaskRecord) error {
	if len(recs) == 0 {
		return nil
	}
	bp := copyBuffers.Get().(*[]byte)
	b := append((*bp)[:0], "PGCOPY\n\xff\r\n\x00"...)
	b = binary.BigEndian.AppendUint32(b, 0) // flags
	b = binary.BigEndian.AppendUint32(b, 0) // header extension
	for i := range recs {
		b = appendTaskRecordRow(b, &recs[i])
	}
	b = binary.BigEndian.AppendUint16(b, 0xffff) // the trailer: -1 fields
	err := copyIn(ctx, s.relaxedDB(ctx), copyTaskRecordsSQL, bytes.NewReader(b))
	if cap(b) <= maxPooledCopy {
		*bp = b
		copyBuffers.Put(bp)
	}
	return err
}

// copyBuffers keeps the buffers of WriteTaskRecords for the next batch,
// up to maxPooledCopy bytes each (a batch of records cut to a large
// budget is not kept).
var copyBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledCopy = 4 << 20

// copyIn sends a COPY FROM STDIN's data on q's connection.
func copyIn(ctx context.Context, q querier, sql string, data io.Reader) error {
	switch db := q.(type) {
	case pgx.Tx:
		_, err := db.Conn().PgConn().CopyFrom(ctx, data, sql)
		return err
	case *pgxpool.Pool:
		conn, err := db.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		_, err = conn.Conn().PgConn().CopyFrom(ctx, data, sql)
		return err
	}
	return fmt.Errorf("copy: no connection of %T", q)
}

func appendTaskRecordRow(b []byte, r *TaskRecord) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(taskRecordCopyColumns)))
	b = copyInt64(b, r.ResourceID)
	b = copyInt64(b, r.TaskID)
	b = copyText(b, r.Trigger)
	b = copyInt64(b, r.Generation)
	b = copyInt32(b, r.Attempt)
	b = copyText(b, r.Worker)
	b = copyText(b, r.Session)
	b = copyTime(b, r.ClaimedAt)
	if r.DispatchedAt.IsZero() {
		b = binary.BigEndian.AppendUint32(b, 0xffffffff) // NULL
	} else {
		b = copyTime(b, r.DispatchedAt)
	}
	b = copyTime(b, r.EndedAt)
	b = copyText(b, r.Outcome)
	b = copyText(b, r.DiscardReason)
	b = copyBool(b, r.Failed)
	b = copyBool(b, r.Terminal)
	b = copyText(b, r.ErrorReason)
	b = copyText(b, r.Error)
	b = copyInt32(b, r.Children)
	b = copyBool(b, r.Truncated)
	b = copyBytes(b, r.Input)
	return copyBytes(b, r.Result)
}

func copyInt64(b []byte, v int64) []byte {
	b = binary.BigEndian.AppendUint32(b, 8)
	return binary.BigEndian.AppendUint64(b, uint64(v))
}

func copyInt32(b []byte, v int32) []byte {
	b = binary.BigEndian.AppendUint32(b, 4)
	return binary.BigEndian.AppendUint32(b, uint32(v))
}

func copyBool(b []byte, v bool) []byte {
	b = binary.BigEndian.AppendUint32(b, 1)
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func copyText(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// copyBytes writes a bytea; nil is the empty value, not NULL.
func copyBytes(b, v []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// postgresEpoch is where timestamptz counts microseconds from.
var postgresEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()

func copyTime(b []byte, t time.Time) []byte {
	b = binary.BigEndian.AppendUint32(b, 8)
	return binary.BigEndian.AppendUint64(b, uint64(t.UnixMicro()-postgresEpoch))
}
