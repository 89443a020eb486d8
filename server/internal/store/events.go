package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Event is one recorded event.
type Event struct {
	ID         int64
	ResourceID int64
	Namespace  string
	Kind       string
	Name       string
	Generation int64
	Type       string
	Reason     string
	Message    string
	Actor      string
	At         time.Time
}

// maxEventMessage bounds a stored event message.
const maxEventMessage = 4096

// eventBatch collects events to insert with one statement.
type eventBatch struct {
	ids                              []int64
	namespaces, kinds, names         []string
	generations                      []int64
	types, reasons, messages, actors []string
}

func newEventBatch() *eventBatch { return &eventBatch{} }

func (b *eventBatch) add(id int64, namespace, kind, name string, generation int64, typ, reason, message, actor string) {
	b.ids = append(b.ids, id)
	b.namespaces = append(b.namespaces, namespace)
	b.kinds = append(b.kinds, kind)
	b.names = append(b.names, name)
	b.generations = append(b.generations, generation)
	b.types = append(b.types, typ)
	b.reasons = append(b.reasons, reason)
	b.messages = append(b.messages, truncate(message, maxEventMessage))
	b.actors = append(b.actors, actor)
}

func (b *eventBatch) queue(batch *pgx.Batch) {
	if len(b.ids) == 0 {
		return
	}
	batch.Queue(`INSERT INTO events (resource_id, namespace, kind, name, generation, type, reason, message, actor)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::bigint[],
		                     $6::text[], $7::text[], $8::text[], $9::text[])`,
		b.ids, b.namespaces, b.kinds, b.names, b.generations, b.types, b.reasons, b.messages, b.actors)
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// EventFilter selects events; empty fields match anything.
type EventFilter struct {
	Namespace, Kind, Name string
	// BeforeID pages backwards: only events with a smaller id.
	BeforeID int64
	Limit    int
	// Visible limits the events to what the caller may read; nil: all.
	// Kind events (no namespace) are kind-level, so every reader sees them.
	Visible *Visible
}

// RecordKindEvent records a write to the definition of a kind version
// (version 0: the kind as a whole) as an event of the kind, by actor. Kind
// events have no resource and no namespace: they are listed with the
// events of every namespace.
func (s *Store) RecordKindEvent(ctx context.Context, kind string, version int32, reason, message, actor string) error {
	name := ""
	if version > 0 {
		name = fmt.Sprintf("v%d", version)
	}
	_, err := s.db(ctx).Exec(ctx, `
		INSERT INTO events (resource_id, namespace, kind, name, generation, type, reason, message, actor)
		VALUES (NULL, '', $1, $2, 0, 'Normal', $3, $4, $5)`, kind, name, reason, truncate(message, maxEventMessage), actor)
	return err
}

// ListEvents returns events newest first: the stored ones and the
// Created events read from their resources' rows (see
// converge_created_event), which hold the ids reserved for them.
func (s *Store) ListEvents(ctx context.Context, f EventFilter) ([]Event, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	args := []any{f.Namespace, f.Kind, f.Name, f.BeforeID, f.Limit}
	visible, derivedVisible := "", ""
	if c := visibleClause(f.Visible, "namespace", "kind", func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}); c != "" {
		visible, derivedVisible = " AND (namespace = '' OR "+c+")", " AND "+c
	}
	rows, err := s.db(ctx).Query(ctx, `
		SELECT id, coalesce(resource_id, 0), namespace, kind, name, generation, type, reason, message, actor, at
		FROM ((SELECT * FROM events
		       WHERE ($1 = '' OR namespace = $1 OR namespace = '') AND ($2 = '' OR kind = $2) AND ($3 = '' OR name = $3)
		         AND ($4 = 0 OR id < $4)`+visible+`
		       ORDER BY id DESC LIMIT $5)
		      UNION ALL
		      (SELECT (converge_created_event(r)).* FROM resources r
		       WHERE r.created_event IS NOT NULL
		         AND ($1 = '' OR namespace = $1) AND ($2 = '' OR kind = $2) AND ($3 = '' OR name = $3)
		         AND ($4 = 0 OR r.created_event < $4)`+derivedVisible+`
		       ORDER BY r.created_event DESC LIMIT $5)) e
		ORDER BY id DESC LIMIT $5`, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Event, error) {
		var e Event
		err := row.Scan(&e.ID, &e.ResourceID, &e.Namespace, &e.Kind, &e.Name, &e.Generation, &e.Type,
			&e.Reason, &e.Message, &e.Actor, &e.At)
		return e, err
	})
}
