// Package migrations holds the database schema as goose migrations,
// embedded so the converge binary carries its own schema.
package migrations

import "embed"

// FS holds every migration file, applied in version order.
//
//go:embed *.sql
var FS embed.FS
