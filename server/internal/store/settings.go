package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// SettingLogLevel is the cluster-wide log level ("debug", "info", "warn"
// or "error").
const SettingLogLevel = "log_level"

// Setting is a cluster setting and who set it.
type Setting struct {
	Value string
	SetBy string
	SetAt time.Time
}

// SetClusterSetting sets name for every replica; an empty value removes
// it, leaving each replica to its flag.
func (s *Store) SetClusterSetting(ctx context.Context, name, value, by string) error {
	if value == "" {
		_, err := s.db(ctx).Exec(ctx, `DELETE FROM cluster_settings WHERE name = $1`, name)
		return err
	}
	_, err := s.db(ctx).Exec(ctx, `
		INSERT INTO cluster_settings (name, value, set_by) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, set_by = EXCLUDED.set_by, set_at = now()`,
		name, value, by)
	return err
}

// ClusterSetting reads one setting; ok is false when it is not set.
func (s *Store) ClusterSetting(ctx context.Context, name string) (Setting, bool, error) {
	var st Setting
	err := s.db(ctx).QueryRow(ctx, `SELECT value, set_by, set_at FROM cluster_settings WHERE name = $1`, name).
		Scan(&st.Value, &st.SetBy, &st.SetAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, false, nil
	}
	return st, err == nil, err
}
