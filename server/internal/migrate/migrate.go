// Package migrate applies Converge's embedded schema migrations to a
// PostgreSQL database.
//
// Every call takes a session-level advisory lock for the duration of the
// change, so any number of replicas may migrate the same database at boot
// at once: one applies the pending migrations, the others wait and then
// find nothing left to do.
package migrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/convergehq/converge/migrations"
)

// VersionTable is the table that records which migrations are applied.
// It has its own name, not goose's default, so Converge can share a
// database with another application that also uses goose.
const VersionTable = "converge_migrations"

// lockID keys the advisory lock that serialises migrations. It differs
// from goose's default for the same reason VersionTable does.
var lockID = int64(crc32.ChecksumIEEE([]byte("converge.migrate")))

// Step is one migration that Up or Down ran.
type Step struct {
	Version   int64
	File      string // file name, e.g. "00001_core.sql"
	Direction string // "up" or "down"
	Duration  time.Duration
}

// String renders the step the way the CLI prints it.
func (s Step) String() string {
	return fmt.Sprintf("%-4s %s (%s)", s.Direction, s.File, s.Duration.Round(time.Millisecond))
}

// State is one known migration and whether the database has it.
type State struct {
	Version   int64
	File      string
	AppliedAt time.Time // zero while the migration is pending
}

// Applied reports whether the migration is applied.
func (s State) Applied() bool { return !s.AppliedAt.IsZero() }

// String renders the state the way the CLI prints it: "applied", the
// time in UTC and the file, or "pending" and the file.
func (s State) String() string {
	at := "-"
	if s.Applied() {
		at = s.AppliedAt.UTC().Format(time.RFC3339)
	}
	state := "pending"
	if s.Applied() {
		state = "applied"
	}
	return fmt.Sprintf("%-7s  %-20s  %s", state, at, s.File)
}

// Up applies every pending migration and returns the steps it ran, in
// order. It returns no steps when the database is already current.
//
// It then applies migrations.Functions (every function and trigger) if
// the database does not hold that exact file yet, so a server started on
// a current schema applies nothing.
func Up(ctx context.Context, databaseURL string) ([]Step, error) {
	return up(ctx, databaseURL, migrations.FS, migrations.Functions)
}

// Down rolls back every applied migration newer than toVersion, newest
// first, and returns the steps it ran. toVersion 0 removes the whole
// schema, functions and triggers first; the current version minus one
// undoes one step and leaves the functions to the binary of that version,
// which applies its own functions.sql when it starts.
func Down(ctx context.Context, databaseURL string, toVersion int64) ([]Step, error) {
	return down(ctx, databaseURL, migrations.FS, toVersion)
}

// Status lists every embedded migration in version order with the time it
// was applied, or a zero time if it is pending.
func Status(ctx context.Context, databaseURL string) ([]State, error) {
	var states []State
	err := withProvider(ctx, databaseURL, migrations.FS, func(p *goose.Provider) error {
		list, err := p.Status(ctx)
		if err != nil {
			return fmt.Errorf("migrate status: %w", err)
		}
		for _, s := range list {
			st := State{Version: s.Source.Version, File: path.Base(s.Source.Path)}
			if s.State == goose.StateApplied {
				st.AppliedAt = s.AppliedAt
			}
			states = append(states, st)
		}
		return nil
	})
	return states, err
}

// Version returns the highest applied migration version, 0 when none is.
// It does not wait for a migration in progress elsewhere, so it is safe to
// call from a readiness check.
func Version(ctx context.Context, databaseURL string) (int64, error) {
	var v int64
	err := withProvider(ctx, databaseURL, migrations.FS, func(p *goose.Provider) error {
		current, _, err := p.GetVersions(ctx)
		if err != nil {
			return fmt.Errorf("migrate version: %w", err)
		}
		v = current
		return nil
	})
	return v, err
}

func up(ctx context.Context, databaseURL string, fsys fs.FS, functions string) ([]Step, error) {
	var steps []Step
	err := withProvider(ctx, databaseURL, fsys, func(p *goose.Provider) error {
		if err := refuseUnknown(ctx, p); err != nil {
			return err
		}
		res, err := p.Up(ctx)
		steps = toSteps(res, err)
		return describe("up", err)
	})
	if err != nil || functions == "" {
		return steps, err
	}
	return steps, applyFunctions(ctx, databaseURL, functions)
}

func down(ctx context.Context, databaseURL string, fsys fs.FS, toVersion int64) ([]Step, error) {
	if toVersion < 0 {
		return nil, fmt.Errorf("migrate down: toVersion must be 0 or more, got %d", toVersion)
	}
	if toVersion == 0 {
		if err := dropFunctions(ctx, databaseURL); err != nil {
			return nil, err
		}
	}
	var steps []Step
	err := withProvider(ctx, databaseURL, fsys, func(p *goose.Provider) error {
		res, err := p.DownTo(ctx, toVersion)
		steps = toSteps(res, err)
		return describe("down", err)
	})
	return steps, err
}

// withProvider opens the database, builds a locking goose provider over
// fsys and runs fn with it.
func withProvider(ctx context.Context, databaseURL string, fsys fs.FS, fn func(*goose.Provider) error) error {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return fmt.Errorf("migrate: database URL: %w", err)
	}
	// goose records applied-at as a timestamp without time zone, in the
	// session's zone; pin it to UTC so State.AppliedAt means what it says.
	cfg.RuntimeParams["timezone"] = "UTC"
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	p, err := newProvider(db, fsys)
	if err != nil {
		return err
	}
	return fn(p)
}

func newProvider(db *sql.DB, fsys fs.FS) (*goose.Provider, error) {
	// Retry every second (the minimum) for up to ten minutes: a waiting
	// replica starts as soon as the migrating one finishes.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(lockID), lock.WithLockTimeout(1, 600))
	if err != nil {
		return nil, fmt.Errorf("migrate: session locker: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys,
		goose.WithTableName(VersionTable),
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true),
	)
	if err != nil {
		return nil, fmt.Errorf("migrate: load migrations: %w", err)
	}
	return p, nil
}

// toSteps converts goose's results, including the steps that completed
// before a failure.
func toSteps(res []*goose.MigrationResult, err error) []Step {
	var partial *goose.PartialError
	if errors.As(err, &partial) {
		res = partial.Applied
	}
	steps := make([]Step, 0, len(res))
	for _, r := range res {
		steps = append(steps, Step{
			Version:   r.Source.Version,
			File:      path.Base(r.Source.Path),
			Direction: r.Direction,
			Duration:  r.Duration,
		})
	}
	return steps
}

// describe names the migration file that failed, if one did.
func describe(direction string, err error) error {
	if err == nil {
		return nil
	}
	var partial *goose.PartialError
	if errors.As(err, &partial) && partial.Failed != nil && partial.Failed.Source != nil {
		return fmt.Errorf("migrate %s: %s: %w", direction, path.Base(partial.Failed.Source.Path), partial.Err)
	}
	return fmt.Errorf("migrate %s: %w", direction, err)
}
