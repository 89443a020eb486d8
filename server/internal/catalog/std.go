package catalog

import (
	"io/fs"
	"sync"

	std "github.com/convergehq/converge/catalog/std"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/conctl/document"
)

// stdKinds are the manifests of the std kinds stdworker serves, which
// graphs may use without the catalog holding them.
var stdKinds = sync.OnceValue(func() map[versionKey]*convergev1.KindManifest {
	out := map[versionKey]*convergev1.KindManifest{}
	_ = fs.WalkDir(std.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		data, err := fs.ReadFile(std.FS, p)
		if err != nil {
			return nil
		}
		docs, _ := document.Parse(p, data)
		for _, doc := range docs {
			if m, ok := doc.Message.(*convergev1.KindManifest); ok {
				out[versionKey{m.GetKind(), int(m.GetKindVersion())}] = m
			}
		}
		return nil
	})
	return out
})

// stdManifest returns a std kind version's manifest, or nil.
func stdManifest(kind string, n int) *convergev1.KindManifest {
	return stdKinds()[versionKey{kind, n}]
}
