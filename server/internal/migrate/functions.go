package migrate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/pressly/goose/v3"
)

// functionsLockID serialises applying functions.sql across replicas
// starting at once; it is not goose's lock, which is released by then.
var functionsLockID = int64(crc32.ChecksumIEEE([]byte("converge.functions")))

// applyFunctions applies functions.sql in one transaction unless the
// database records that it holds this exact file already. Replacing a
// trigger locks its table, so a server restarted on a current schema must
// not do it at all.
func applyFunctions(ctx context.Context, databaseURL, functions string) error {
	sum := sha256.Sum256([]byte(functions))
	checksum := hex.EncodeToString(sum[:])
	conn, err := connect(ctx, databaseURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, functionsLockID); err != nil {
			return fmt.Errorf("migrate functions: %w", err)
		}
		var have string
		err := tx.QueryRow(ctx, `SELECT checksum FROM converge_functions`).Scan(&have)
		if err != nil && err != pgx.ErrNoRows {
			return fmt.Errorf("migrate functions: %w", err)
		}
		if have == checksum {
			return nil
		}
		if _, err := tx.Exec(ctx, functions, pgx.QueryExecModeSimpleProtocol); err != nil {
			return fmt.Errorf("migrate functions: functions.sql: %w", err)
		}
		_, err = tx.Exec(ctx, `INSERT INTO converge_functions (checksum) VALUES ($1)
			ON CONFLICT (one) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()`, checksum)
		if err != nil {
			return fmt.Errorf("migrate functions: %w", err)
		}
		return nil
	})
}

// dropFunctions drops every converge_ function of the schema with what
// depends on it (the triggers), before the migrations drop the tables.
func dropFunctions(ctx context.Context, databaseURL string) error {
	conn, err := connect(ctx, databaseURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT p.oid::regprocedure::text FROM pg_proc p
		WHERE p.pronamespace = current_schema()::regnamespace AND p.proname LIKE 'converge\_%'
		ORDER BY 1`)
	if err != nil {
		return fmt.Errorf("migrate down: listing functions: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("migrate down: listing functions: %w", err)
	}
	if len(names) == 0 {
		return nil
	}
	if _, err := conn.Exec(ctx, "DROP FUNCTION IF EXISTS "+strings.Join(names, ", ")+" CASCADE"); err != nil {
		return fmt.Errorf("migrate down: dropping functions: %w", err)
	}
	return nil
}

// refuseUnknown refuses a database at a schema version this binary does
// not know: one migrated by a newer Converge, or by the pre-release schema
// whose migrations 2 to 6 were folded into migration 1. goose would
// otherwise report nothing to do, and the server would run on a schema it
// does not match.
func refuseUnknown(ctx context.Context, p *goose.Provider) error {
	var newest int64
	for _, s := range p.ListSources() {
		newest = max(newest, s.Version)
	}
	applied, err := p.GetDBVersion(ctx)
	if err != nil {
		return fmt.Errorf("migrate up: %w", err)
	}
	if applied <= newest {
		return nil
	}
	return fmt.Errorf("migrate up: the database is at schema version %d, which this converge does not know "+
		"(it knows versions up to %d): it was migrated by a newer converge, or by a pre-release one whose "+
		"migrations 2 to 6 were folded into migration 1; run the converge that migrated it, or recreate the "+
		"database (export its resources first with conctl get -o yaml)", applied, newest)
}

func connect(ctx context.Context, databaseURL string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("migrate: database URL: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("migrate: connecting: %w", err)
	}
	return conn, nil
}
