package secret

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/convergehq/converge/server/internal/store"
)

// RotationStore is what the rotator reads and rewrites.
type RotationStore interface {
	StaleSealed(ctx context.Context, c store.SealedColumns, current string, limit int) ([]store.SealedRow, error)
	CountStaleSealed(ctx context.Context, c store.SealedColumns, current string) (int64, error)
	ResealRow(ctx context.Context, c store.SealedColumns, old, next store.SealedRow) (bool, error)
}

// Rotator re-seals, in the background, every stored value sealed by a
// data key other than the active one (after a new key became current),
// row by row and without locking anything beyond the row it rewrites.
// Stale counts what was left at the last pass: the
// converge_secret_stale_rows metric, 0 once rotation is done, when the
// old key can be removed from the key file.
type Rotator struct {
	keys     *Keyring
	store    RotationStore
	interval time.Duration
	log      *slog.Logger
	stale    atomic.Int64
	resealed atomic.Int64
	passes   atomic.Int64
}

// rotateBatch bounds the rows one statement reads.
const rotateBatch = 200

// NewRotator returns a rotator passing every interval (default 30s).
func NewRotator(k *Keyring, st RotationStore, interval time.Duration, log *slog.Logger) *Rotator {
	if interval <= 0 {
		interval = 30 * time.Second
	}
	return &Rotator{keys: k, store: st, interval: interval, log: log}
}

// Name implements service.Service.
func (*Rotator) Name() string { return "secret rotator" }

// Stale is how many rows held a value sealed by a retired data key at the
// end of the last pass; -1 before the first.
func (r *Rotator) Stale() int64 {
	if r.passes.Load() == 0 {
		return -1
	}
	return r.stale.Load()
}

// Resealed counts the rows re-sealed since start.
func (r *Rotator) Resealed() int64 { return r.resealed.Load() }

// Run passes at start and every interval until ctx ends.
func (r *Rotator) Run(ctx context.Context) {
	tick := time.NewTicker(r.interval)
	defer tick.Stop()
	for {
		if err := r.Pass(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("re-sealing secret values failed; the next pass tries again", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Pass re-seals what it finds sealed by a retired data key, then counts
// what is left. A replica whose data key is not the newest (its key file
// still puts the old key first, during a rolling key change) only counts.
// Data keys are never dropped while running, since another replica may
// still seal with one; a start without a retired key drops its data key
// once nothing uses it (see Open).
func (r *Rotator) Pass(ctx context.Context) error {
	active := r.keys.ActiveKeyID()
	target, err := r.keys.newest(ctx)
	if err != nil {
		return err
	}
	var left int64
	for _, c := range store.Sealed {
		if target {
			if err := r.resealTable(ctx, c, active); err != nil {
				return err
			}
		}
		n, err := r.store.CountStaleSealed(ctx, c, active)
		if err != nil {
			return err
		}
		left += n
	}
	r.stale.Store(left)
	r.passes.Add(1)
	return nil
}

func (r *Rotator) resealTable(ctx context.Context, c store.SealedColumns, active string) error {
	for ctx.Err() == nil {
		rows, err := r.store.StaleSealed(ctx, c, active, rotateBatch)
		if err != nil || len(rows) == 0 {
			return err
		}
		progressed := false
		for _, row := range rows {
			next := store.SealedRow{Key: row.Key, Cols: make([][]byte, len(row.Cols))}
			for i, col := range row.Cols {
				if col == nil {
					continue
				}
				out, err := r.keys.reseal(ctx, col)
				if err != nil {
					return err
				}
				next.Cols[i] = out
			}
			ok, err := r.store.ResealRow(ctx, c, row, next)
			if err != nil {
				return err
			}
			if ok {
				progressed = true
				r.resealed.Add(1)
			}
		}
		if !progressed {
			return nil // every row changed under us: the next pass sees them
		}
	}
	return ctx.Err()
}

// reseal opens every envelope of JSON text and seals it again with the
// active data key.
func (k *Keyring) reseal(ctx context.Context, raw []byte) ([]byte, error) {
	return k.mapEnvelopes(ctx, raw, func(e Envelope) (Envelope, error) {
		if e.KeyID == k.ActiveKeyID() {
			return e, nil
		}
		plain, err := k.openBytes(ctx, e)
		if err != nil {
			return Envelope{}, err
		}
		return k.sealBytes(plain)
	})
}
