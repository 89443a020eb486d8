package catalog

import (
	"strings"
	"testing"
	"testing/fstest"

	std "github.com/convergehq/converge/catalog/std"
)

func TestEmbeddedStdCatalogParses(t *testing.T) {
	ms, err := Read(std.FS)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range ms {
		if !strings.HasPrefix(m.Manifest.GetKind(), "std.") {
			t.Errorf("%s: kind %q is not a std kind", m.File, m.Manifest.GetKind())
		}
		if m.Manifest.GetKind() == "std.shell" && m.Manifest.GetKindVersion() == 1 && m.File == "std.shell/v1.yaml" {
			found = true
		}
	}
	if !found {
		t.Errorf("std.shell/v1.yaml not among %v", ms)
	}
}

func TestParseRefusesOtherDocuments(t *testing.T) {
	fsys := fstest.MapFS{"x/v1.yaml": {Data: []byte("type: manifest\nkind: x\nkind_version: 1\n---\ntype: resource\nkind: x\n")}}
	if _, err := Read(fsys); err == nil || !strings.Contains(err.Error(), "x/v1.yaml: document 1: type resource") {
		t.Errorf("Read: %v; want the resource document refused", err)
	}
	fsys = fstest.MapFS{"x/v1.yaml": {Data: []byte("kind: x\nkind_versoin: 1\n")}}
	if _, err := Read(fsys); err == nil || !strings.Contains(err.Error(), "kind_versoin") {
		t.Errorf("Read: %v; want the unknown field named", err)
	}
}
