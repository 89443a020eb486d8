package migrate

import (
	"context"
	"io/fs"
)

// UpFS and DownFS run migrations from another file system, without
// functions.sql, so tests can exercise failures the real schema does not
// have.
var (
	UpFS = func(ctx context.Context, databaseURL string, fsys fs.FS) ([]Step, error) {
		return up(ctx, databaseURL, fsys, "")
	}
	DownFS = down
)
