package catalog_test

import (
	"context"
	"os"
	"testing"

	"github.com/convergehq/converge/server/internal/catalog"
)

// TestRepositoryCatalog checks the repository's own catalog/ with every
// rule but stability (scripts/test.sh runs conctl catalog check --base for
// that): what ships must pass the check that contributors' changes face.
func TestRepositoryCatalog(t *testing.T) {
	cat, err := catalog.Load(os.DirFS("../../.."), "catalog")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range cat.Check(context.Background(), nil) {
		t.Error(p)
	}
	if st := cat.Stats(); st.Kinds < 10 || st.Examples < 5 {
		t.Errorf("the catalog shrank: %+v", st)
	}
}
