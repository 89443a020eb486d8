package migrate

// UpFS and DownFS run migrations from another file system, so tests can
// exercise failures the real schema does not have.
var (
	UpFS   = up
	DownFS = down
)
