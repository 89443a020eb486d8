package pgtest_test

import (
	"testing"

	"github.com/convergehq/converge/server/internal/pgtest"
)

// A package's database tests need one TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// and then ask for a database in each test.
func ExampleNew() {
	_ = func(t *testing.T) {
		t.Parallel()
		db := pgtest.New(t)
		if _, err := db.Pool.Exec(t.Context(), "INSERT INTO kinds (kind, kind_version, manifest) VALUES ('Bucket', 1, '{}')"); err != nil {
			t.Fatal(err)
		}
	}
}
