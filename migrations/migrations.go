// Package migrations holds the database schema, embedded so the converge
// binary carries its own schema: versioned goose migrations for tables,
// columns, constraints and indexes (NNNNN_name.sql), functions.sql for
// every function and trigger as they are now, and schema.sql, a snapshot
// of the schema both produce (checked by a test in package migrate).
package migrations

import (
	"embed"
	_ "embed"
)

// FS holds every migration file; goose applies the versioned ones in
// version order and ignores the others.
//
//go:embed *.sql
var FS embed.FS

// Functions is functions.sql: every function and trigger of the schema,
// applied after the migrations whenever it changed.
//
//go:embed functions.sql
var Functions string

// Snapshot is schema.sql, the schema as the repository says it is.
//
//go:embed schema.sql
var Snapshot string
