package store

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// SecretDataKey is a data key of secret values as stored: wrapped by the
// key-encryption key KEKID.
type SecretDataKey struct {
	ID      string
	KEKID   string
	Wrapped []byte
}

// SecretDataKeys returns every stored data key, oldest first.
func (s *Store) SecretDataKeys(ctx context.Context) ([]SecretDataKey, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, kek_id, wrapped FROM secret_keys ORDER BY created_at, id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (SecretDataKey, error) {
		var k SecretDataKey
		err := r.Scan(&k.ID, &k.KEKID, &k.Wrapped)
		return k, err
	})
}

// AddSecretDataKey stores k unless a data key wrapped by k.KEKID exists
// already, and returns the one that is stored.
func (s *Store) AddSecretDataKey(ctx context.Context, k SecretDataKey) (SecretDataKey, error) {
	var out SecretDataKey
	err := s.pool.QueryRow(ctx, `
		WITH ins AS (
		  INSERT INTO secret_keys (id, kek_id, wrapped) VALUES ($1, $2, $3)
		  ON CONFLICT (kek_id) DO NOTHING RETURNING id, kek_id, wrapped)
		SELECT id, kek_id, wrapped FROM ins
		UNION ALL SELECT id, kek_id, wrapped FROM secret_keys WHERE kek_id = $2
		LIMIT 1`, k.ID, k.KEKID, k.Wrapped).Scan(&out.ID, &out.KEKID, &out.Wrapped)
	return out, err
}

// SecretDataKeyUsed reports whether any stored value is sealed by the
// data key id (a scan of every sealed column: for a start that lacks the
// key of an old data key, not for the hot path).
func (s *Store) SecretDataKeyUsed(ctx context.Context, id string) (bool, error) {
	pattern := `"\$secret": ?"` + regexp.QuoteMeta(id) + `:`
	for _, c := range Sealed {
		var used bool
		if err := s.pool.QueryRow(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %s WHERE %s)`, c.Table, c.match()), pattern).Scan(&used); err != nil {
			return false, err
		}
		if used {
			return true, nil
		}
	}
	return false, nil
}

// DropSecretDataKey removes a data key no stored value uses any more.
func (s *Store) DropSecretDataKey(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM secret_keys WHERE id = $1`, id)
	return err
}

// SealedColumns names a table's columns that may hold sealed values,
// and the key columns that identify a row.
type SealedColumns struct {
	Table string
	Key   []string
	Cols  []string
}

// Sealed lists every column that may hold a sealed value. Rotation
// re-seals them all, so a retired key seals nothing that is kept.
var Sealed = []SealedColumns{
	{"resources", []string{"id"}, []string{"spec", "status", "desired_spec", "rejected_status"}},
	{"spec_revisions", []string{"resource_id", "generation"}, []string{"spec"}},
	{"provider_configs", []string{"kind", "kind_version", "name"}, []string{"config"}},
	{"rollout_members", []string{"rollout_id", "resource_id"}, []string{"old_spec"}},
	{"tasks", []string{"id"}, []string{"payload"}},
	{"task_records", []string{"id"}, []string{"input", "result"}},
}

// SealedRow is one row holding a value sealed by a key other than the
// current one: its key, as text, and its sealed columns' JSON.
type SealedRow struct {
	Key  []string
	Cols [][]byte
}

// stalePattern is a regular expression matching the JSON text of a
// document with an envelope of a data key other than current.
func stalePattern(current string) string {
	return `"\$secret": ?"(?!` + current + `:)`
}

func (c SealedColumns) match() string {
	var or []string
	for _, col := range c.Cols {
		or = append(or, col+"::text ~ $1")
	}
	return strings.Join(or, " OR ")
}

// StaleSealed returns up to limit rows of c holding a value sealed by a
// data key other than current.
func (s *Store) StaleSealed(ctx context.Context, c SealedColumns, current string, limit int) ([]SealedRow, error) {
	var sel []string
	for _, k := range c.Key {
		sel = append(sel, k+"::text")
	}
	for _, col := range c.Cols {
		sel = append(sel, col+"::text")
	}
	rows, err := s.pool.Query(ctx, fmt.Sprintf(`SELECT %s FROM %s WHERE %s LIMIT %d`,
		strings.Join(sel, ", "), c.Table, c.match(), limit), stalePattern(current))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SealedRow
	for rows.Next() {
		keys := make([]*string, len(c.Key))
		cols := make([]*string, len(c.Cols))
		dest := make([]any, 0, len(keys)+len(cols))
		for i := range keys {
			dest = append(dest, &keys[i])
		}
		for i := range cols {
			dest = append(dest, &cols[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		r := SealedRow{Key: make([]string, len(keys)), Cols: make([][]byte, len(cols))}
		for i, k := range keys {
			r.Key[i] = *k
		}
		for i, col := range cols {
			if col != nil {
				r.Cols[i] = []byte(*col)
			}
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// CountStaleSealed counts the rows of c holding a value sealed by a data
// key other than current.
func (s *Store) CountStaleSealed(ctx context.Context, c SealedColumns, current string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s WHERE %s`, c.Table, c.match()), stalePattern(current)).Scan(&n)
	return n, err
}

// ResealRow writes a row's re-sealed columns if they still hold what was
// read (a concurrent write wins; the row is re-sealed at the next pass).
// It touches nothing else: no generation, no history, no change feed
// entry beyond the row's own update.
func (s *Store) ResealRow(ctx context.Context, c SealedColumns, old, next SealedRow) (bool, error) {
	var set, where []string
	args := []any{}
	arg := func(v any) string { args = append(args, v); return fmt.Sprintf("$%d", len(args)) }
	for i, k := range c.Key {
		where = append(where, fmt.Sprintf("%s::text = %s", k, arg(old.Key[i])))
	}
	for i, col := range c.Cols {
		if old.Cols[i] == nil {
			where = append(where, col+" IS NULL")
			continue
		}
		where = append(where, fmt.Sprintf("%s::text = %s", col, arg(string(old.Cols[i]))))
		set = append(set, fmt.Sprintf("%s = %s", col, arg(string(next.Cols[i]))))
	}
	if len(set) == 0 {
		return false, nil
	}
	tag, err := s.pool.Exec(ctx, fmt.Sprintf(`UPDATE %s SET %s WHERE %s`, c.Table, strings.Join(set, ", "), strings.Join(where, " AND ")), args...)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// SecretRead is what ReadSecretValues returns: a resource's documents as
// stored (sealed).
type SecretRead struct {
	Generation   int64
	Spec, Status []byte
}

// ReadSecretValues returns a resource's stored spec and status and, in
// the same transaction, records the read as an event naming actor and
// reason: no read goes unrecorded.
func (s *Store) ReadSecretValues(ctx context.Context, key ResourceKey, actor, reason string) (SecretRead, error) {
	var out SecretRead
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `SELECT id, generation, spec, status FROM resources WHERE namespace = $1 AND kind = $2 AND name = $3`,
			key.Namespace, key.Kind, key.Name).Scan(&id, &out.Generation, &out.Spec, &out.Status)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFoundf("resource %s/%s/%s", key.Namespace, key.Kind, key.Name)
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO events (resource_id, namespace, kind, name, generation, type, reason, message, actor)
			VALUES ($1, $2, $3, $4, $5, 'Warning', 'SecretsRead', $6, $7)`,
			id, key.Namespace, key.Kind, key.Name, out.Generation, truncate(withReason("secret values read in clear by "+actor, reason), maxEventMessage), actor)
		return err
	})
	return out, err
}
