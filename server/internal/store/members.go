package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// Served is one reaction a broker's connected workers serve.
type Served struct {
	Kind     string `json:"kind"`
	Version  int32  `json:"kind_version"`
	Reaction string `json:"reaction"`
	Workers  int    `json:"workers"`
	Capacity int    `json:"capacity"`
	// NotReady is why connected workers of the reaction are not ready for
	// it (Workers counts only ready ones), when none is.
	NotReady string `json:"not_ready,omitempty"`
}

// Member is a running server replica.
type Member struct {
	ID          string
	Roles       []string
	Hostname    string
	PID         int
	Version     string
	StartedAt   time.Time
	HeartbeatAt time.Time
	Served      []Served
}

// HeartbeatMember records that member is alive and what its workers
// serve, creating its row if needed.
func (s *Store) HeartbeatMember(ctx context.Context, m Member) error {
	served, err := json.Marshal(m.Served)
	if err != nil {
		return err
	}
	if m.Served == nil {
		served = []byte("[]")
	}
	_, err = s.db(ctx).Exec(ctx, `
		INSERT INTO members (id, roles, hostname, pid, version, served)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), served = EXCLUDED.served`,
		m.ID, m.Roles, m.Hostname, m.PID, m.Version, served)
	return err
}

// LiveMembers returns members that sent a heartbeat within the window.
func (s *Store) LiveMembers(ctx context.Context, within time.Duration) ([]Member, error) {
	rows, err := s.db(ctx).Query(ctx, `
		SELECT id, roles, hostname, pid, version, started_at, heartbeat_at, served FROM members
		WHERE heartbeat_at > now() - $1 * interval '1 millisecond' ORDER BY id`, within.Milliseconds())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Member, error) {
		var m Member
		var served []byte
		if err := row.Scan(&m.ID, &m.Roles, &m.Hostname, &m.PID, &m.Version, &m.StartedAt, &m.HeartbeatAt, &served); err != nil {
			return m, err
		}
		return m, json.Unmarshal(served, &m.Served)
	})
}

// DeleteMember removes a member row (on clean shutdown).
func (s *Store) DeleteMember(ctx context.Context, id string) error {
	_, err := s.db(ctx).Exec(ctx, `DELETE FROM members WHERE id = $1`, id)
	return err
}

// ForgetDeadMembers deletes members silent for longer than after.
func (s *Store) ForgetDeadMembers(ctx context.Context, after time.Duration) (int64, error) {
	tag, err := s.db(ctx).Exec(ctx, `DELETE FROM members WHERE heartbeat_at < now() - $1 * interval '1 millisecond'`,
		after.Milliseconds())
	return tag.RowsAffected(), err
}
