package store

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/convergehq/converge/server/internal/trigger"
	"github.com/jackc/pgx/v5"
)

// Operation is an operation verb invoked on a resource. It runs as a task
// (trigger "operation:<verb>", key = ID) and outlives its resource.
type Operation struct {
	ID         string
	ResourceID int64
	Namespace  string
	Kind       string
	Name       string
	Verb       string
	Input      []byte // JSON object
	// State is pending, running, succeeded or failed.
	State       string
	Output      []byte // JSON object, once succeeded
	Message     *string
	Actor       string
	Reason      string
	Attempts    int32
	RequestedAt time.Time
	FinishedAt  *time.Time
}

// MaxListedOperations is the most operations ListOperations returns.
const MaxListedOperations = 100

const operationColumns = `id, resource_id, namespace, kind, name, verb, input, state, output, message,
	actor, reason, attempts, requested_at, finished_at`

func scanOperation(row pgx.Row) (Operation, error) {
	var o Operation
	err := row.Scan(&o.ID, &o.ResourceID, &o.Namespace, &o.Kind, &o.Name, &o.Verb, &o.Input, &o.State,
		&o.Output, &o.Message, &o.Actor, &o.Reason, &o.Attempts, &o.RequestedAt, &o.FinishedAt)
	return o, err
}

// OperationRequest asks for a verb to run on a resource.
type OperationRequest struct {
	Key  ResourceKey
	Verb string
	// Input is a JSON object, already validated against the verb's
	// input_schema of kind version KindVersion at revision KindRevision.
	// If the resource moved to another version or the kind changed since,
	// InvokeOperation fails with ErrStaleKind and the caller validates
	// again.
	Input        []byte
	KindVersion  int32
	KindRevision int64
	Actor        string
	Reason       string
}

// InvokeOperation records an operation and queues its task, in one
// transaction with its OperationRequested event. The operation starts
// pending. Refused (ErrConflict) for a resource being deleted or
// quarantined.
func (s *Store) InvokeOperation(ctx context.Context, req OperationRequest) (Operation, error) {
	var op Operation
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		row, err := lockForAction(ctx, tx, req.Key)
		if err != nil {
			return err
		}
		switch {
		case row.hold == HoldDeleting:
			return conflictf("%s is being deleted; operations cannot run on it", row)
		case row.hold == HoldQuarantined:
			return conflictf("%s is quarantined: unquarantine it first", row)
		case row.kindVersion != req.KindVersion:
			return fmt.Errorf("%w: %s moved from kind version %d to %d", ErrStaleKind, row, req.KindVersion, row.kindVersion)
		}
		// FOR KEY SHARE keeps the kind from being deleted before commit (see DeleteKind).
		var revision int64
		err = tx.QueryRow(ctx, `SELECT revision FROM kinds WHERE kind = $1 AND kind_version = $2 FOR KEY SHARE`,
			row.kind, row.kindVersion).Scan(&revision)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && revision != req.KindRevision) {
			return fmt.Errorf("%w: %s v%d", ErrStaleKind, row.kind, row.kindVersion)
		}
		if err != nil {
			return err
		}
		id, err := NewOperationID(time.Now())
		if err != nil {
			return err
		}
		op, err = scanOperation(tx.QueryRow(ctx, `
			INSERT INTO operations (id, resource_id, namespace, kind, name, verb, input, actor, reason)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			RETURNING `+operationColumns,
			id, row.id, row.namespace, row.kind, row.name, req.Verb, req.Input, req.Actor, req.Reason))
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO tasks (resource_id, trigger, key, payload, kind, kind_version, shard, generation)
			SELECT r.id, $2::text || $3::text, $4, jsonb_build_object('id', $4::text, 'verb', $3::text, 'input', $5::jsonb),
			       r.kind, r.kind_version, r.shard, r.generation
			FROM resources r WHERE r.id = $1`,
			row.id, trigger.OperationPrefix, req.Verb, id, req.Input); err != nil {
			return err
		}
		msg := withReason(fmt.Sprintf("operation %s requested (id %s)", req.Verb, id), req.Reason)
		return insertEvent(ctx, tx, row, "Normal", "OperationRequested", msg, req.Actor)
	})
	return op, err
}

// GetOperation reads one operation by id.
func (s *Store) GetOperation(ctx context.Context, id string) (Operation, error) {
	op, err := scanOperation(s.db(ctx).QueryRow(ctx, `SELECT `+operationColumns+` FROM operations WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return op, notFoundf("operation %q not found", id)
	}
	return op, err
}

// ListOperations returns a resource's operations, newest first, at most
// MaxListedOperations. The resource must exist: operations of an earlier
// resource by the same name are not its own.
func (s *Store) ListOperations(ctx context.Context, key ResourceKey) ([]Operation, error) {
	var id int64
	err := s.db(ctx).QueryRow(ctx, `SELECT id FROM resources WHERE namespace = $1 AND kind = $2 AND name = $3`,
		key.Namespace, key.Kind, key.Name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFoundf("resource %s/%s/%s not found", key.Namespace, key.Kind, key.Name)
	}
	if err != nil {
		return nil, err
	}
	rows, err := s.db(ctx).Query(ctx, `SELECT `+operationColumns+` FROM operations
		WHERE resource_id = $1 ORDER BY requested_at DESC, id DESC LIMIT $2`, id, MaxListedOperations)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Operation, error) { return scanOperation(row) })
}

// operationIDAlphabet is Crockford's base32 in lower case: no i, l, o, u.
const operationIDAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// NewOperationID returns a 26-character operation id: lower-case
// Crockford base32 of 128 bits, the first 48 the time in milliseconds
// since the Unix epoch and the other 80 random. Ids of operations
// requested in different milliseconds therefore sort by time, and ids are
// safe in URLs and file names.
func NewOperationID(at time.Time) (string, error) {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(at.UnixMilli())<<16)
	if _, err := rand.Read(b[6:]); err != nil {
		return "", fmt.Errorf("operation id: %w", err)
	}
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	var out [26]byte
	// 26 characters of 5 bits hold 130 bits: the first character holds
	// only the top 3 bits of the 128.
	for i := 25; i >= 0; i-- {
		out[i] = operationIDAlphabet[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:]), nil
}
