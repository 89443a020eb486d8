package store

import (
	"context"
	"fmt"
	"strings"
)

// CountResources counts the resources f selects (its After, Limit and
// Summary are ignored) by phase; phases with none are left out.
func (s *Store) CountResources(ctx context.Context, f ListFilter) (map[string]int64, error) {
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	where, err := f.conditions(arg)
	if err != nil {
		return nil, err
	}
	q := `SELECT converge_phase(r), count(*) FROM resources r`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " GROUP BY 1"
	rows, err := s.db(ctx).Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("counting resources by phase: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var phase string
		var n int64
		if err := rows.Scan(&phase, &n); err != nil {
			return nil, fmt.Errorf("counting resources by phase: %w", err)
		}
		out[phase] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("counting resources by phase: %w", err)
	}
	return out, nil
}
