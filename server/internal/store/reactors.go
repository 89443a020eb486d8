package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// ReactorBinding tells a reactor kind about transitions of the resources
// of a watched kind.
type ReactorBinding struct {
	Name      string
	WatchKind string
	// WatchKindVersion 0 watches every version of WatchKind.
	WatchKindVersion   int32
	Transitions        []string
	LabelSelector      string
	ReactorKind        string
	ReactorKindVersion int32
	Disabled           bool
	Revision           int64
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

// ErrInvalidBinding: a binding names a kind that is not registered. The
// wrapped message names the field.
var ErrInvalidBinding = errors.New("invalid reactor binding")

const bindingColumns = `name, watch_kind, watch_kind_version, transitions, label_selector,
	reactor_kind, reactor_kind_version, disabled, revision, created_at, updated_at`

func scanBinding(row pgx.Row) (ReactorBinding, error) {
	var b ReactorBinding
	err := row.Scan(&b.Name, &b.WatchKind, &b.WatchKindVersion, &b.Transitions, &b.LabelSelector,
		&b.ReactorKind, &b.ReactorKindVersion, &b.Disabled, &b.Revision, &b.CreatedAt, &b.UpdatedAt)
	return b, err
}

// ApplyReactorBinding creates or updates a binding. The result is
// "created", "configured" (revision bumped) or "unchanged". The reactor
// kind version is locked FOR KEY SHARE until commit, so a concurrent
// DeleteKind either sees the binding or makes this apply fail.
func (s *Store) ApplyReactorBinding(ctx context.Context, b ReactorBinding) (ReactorBinding, string, error) {
	var out ReactorBinding
	var result string
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM kinds WHERE kind = $1 AND kind_version = $2 FOR KEY SHARE`,
			b.ReactorKind, b.ReactorKindVersion).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return invalidBindingf("binding.reactor_kind: kind %s v%d is not registered; apply the reactor kind first",
				b.ReactorKind, b.ReactorKindVersion)
		}
		if err != nil {
			return err
		}
		var watched bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM kinds WHERE kind = $1 AND ($2 = 0 OR kind_version = $2))`,
			b.WatchKind, b.WatchKindVersion).Scan(&watched); err != nil {
			return err
		}
		if !watched {
			if b.WatchKindVersion == 0 {
				return invalidBindingf("binding.watch_kind: no version of kind %s is registered", b.WatchKind)
			}
			return invalidBindingf("binding.watch_kind_version: kind %s v%d is not registered", b.WatchKind, b.WatchKindVersion)
		}
		prev, err := scanBinding(tx.QueryRow(ctx, `SELECT `+bindingColumns+` FROM reactor_bindings WHERE name = $1 FOR UPDATE`, b.Name))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			result = "created"
			out, err = scanBinding(tx.QueryRow(ctx, `
				INSERT INTO reactor_bindings (name, watch_kind, watch_kind_version, transitions, label_selector,
				    reactor_kind, reactor_kind_version, disabled)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
				RETURNING `+bindingColumns,
				b.Name, b.WatchKind, b.WatchKindVersion, b.Transitions, b.LabelSelector,
				b.ReactorKind, b.ReactorKindVersion, b.Disabled))
			return err
		case err != nil:
			return err
		}
		if sameBinding(prev, b) {
			result, out = "unchanged", prev
			return nil
		}
		result = "configured"
		out, err = scanBinding(tx.QueryRow(ctx, `
			UPDATE reactor_bindings SET watch_kind = $2, watch_kind_version = $3, transitions = $4,
			    label_selector = $5, reactor_kind = $6, reactor_kind_version = $7, disabled = $8,
			    revision = revision + 1, updated_at = now()
			WHERE name = $1
			RETURNING `+bindingColumns,
			b.Name, b.WatchKind, b.WatchKindVersion, b.Transitions, b.LabelSelector,
			b.ReactorKind, b.ReactorKindVersion, b.Disabled))
		return err
	})
	return out, result, err
}

func sameBinding(a, b ReactorBinding) bool {
	return a.WatchKind == b.WatchKind && a.WatchKindVersion == b.WatchKindVersion &&
		slices.Equal(a.Transitions, b.Transitions) && a.LabelSelector == b.LabelSelector &&
		a.ReactorKind == b.ReactorKind && a.ReactorKindVersion == b.ReactorKindVersion && a.Disabled == b.Disabled
}

// GetReactorBinding returns one binding.
func (s *Store) GetReactorBinding(ctx context.Context, name string) (ReactorBinding, error) {
	b, err := scanBinding(s.db(ctx).QueryRow(ctx, `SELECT `+bindingColumns+` FROM reactor_bindings WHERE name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return b, notFoundf("reactor binding %q not found", name)
	}
	return b, err
}

// ListReactorBindings returns every binding, or those watching one kind,
// by name.
func (s *Store) ListReactorBindings(ctx context.Context, watchKind string) ([]ReactorBinding, error) {
	return listBindings(ctx, s.db(ctx), watchKind)
}

func listBindings(ctx context.Context, q querier, watchKind string) ([]ReactorBinding, error) {
	rows, err := q.Query(ctx, `SELECT `+bindingColumns+` FROM reactor_bindings
		WHERE $1 = '' OR watch_kind = $1 ORDER BY name`, watchKind)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (ReactorBinding, error) { return scanBinding(row) })
}

// DeleteReactorBinding removes a binding. Deliveries it already queued
// still run.
func (s *Store) DeleteReactorBinding(ctx context.Context, name string) error {
	tag, err := s.db(ctx).Exec(ctx, `DELETE FROM reactor_bindings WHERE name = $1`, name)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return notFoundf("reactor binding %q not found", name)
	}
	return nil
}

// CountReactorBindings reports how many bindings exist, enabled or not.
func (s *Store) CountReactorBindings(ctx context.Context) (int, error) {
	var n int
	err := s.db(ctx).QueryRow(ctx, `SELECT count(*) FROM reactor_bindings`).Scan(&n)
	return n, err
}

// bindingsUsing names the bindings whose reactor is a kind version; the
// caller holds that kind row FOR UPDATE, so no binding can start using it
// meanwhile.
func bindingsUsing(ctx context.Context, tx pgx.Tx, kind string, version int32) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT name FROM reactor_bindings
		WHERE reactor_kind = $1 AND reactor_kind_version = $2 ORDER BY name`, kind, version)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func invalidBindingf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidBinding, fmt.Sprintf(format, args...))
}

// quoteList renders names for an error message.
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = `"` + n + `"`
	}
	return strings.Join(q, ", ")
}
