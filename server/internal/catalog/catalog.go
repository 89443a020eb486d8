// Package catalog loads a kind catalog (catalog/<team>/<kind>/v<N>.yaml with
// OWNERS, READMEs, examples, provider configs, reactor bindings and
// Starlark bundles) and checks it like a compiler: every problem with its
// file, line, field path and rule ID (C1-C12, see docs/catalog.md).
//
// The rules are the server's own where the server has them: manifests are
// compiled by manifest.Compile, schemas by schema.Compile, CEL graphs by
// stdcel.Compile, bundles by stdstarlark.CheckBundle and stability by
// compat.CheckManifest.
package catalog

import (
	"io/fs"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// Catalog is a loaded catalog tree. Load builds it; Check checks it.
type Catalog struct {
	// Teams are the team directories, sorted by name.
	Teams []*Team

	fsys     fs.FS
	problems []Problem // found while loading: unreadable or unparsable files
}

// Team is one team directory.
type Team struct {
	// Name is the directory's name.
	Name string
	// Dir is the directory as shown in problems.
	Dir string
	// Owners are the entries of the OWNERS file, without blank lines and
	// comments.
	Owners []string
	// OwnersFile is the OWNERS file as shown in problems (whether or not
	// it exists); HasOwners reports whether it does.
	OwnersFile string
	HasOwners  bool
	// Kinds are the team's kind directories, sorted by name.
	Kinds []*Kind
}

// Kind is one kind directory of a team.
type Kind struct {
	// Name is the directory's name: the kind's name.
	Name string
	// Team is the name of the team that owns the directory.
	Team string
	// Dir is the directory as shown in problems.
	Dir string
	// HasReadme reports whether the directory has a README.md.
	HasReadme bool
	// Versions are the v<N>.yaml files, sorted by N.
	Versions []*Version
	// BadVersionFiles are files named like a version that are not
	// v<N>.yaml with N >= 1 (v0.yaml, v01.yaml), as shown in problems.
	BadVersionFiles []string
	// Examples, Configs and Bindings are the documents of examples/,
	// configs/ and bindings/, in file order.
	Examples, Configs, Bindings []*Doc
	// Bundles are the directories holding a main.star, relative to fsys.
	Bundles []string

	bundleShown []string // Bundles as shown in problems
}

// Version is one v<N>.yaml file.
type Version struct {
	// N is the version the file name gives.
	N int
	// File is the file as shown in problems.
	File string
	// Docs are the documents the file holds; Count counts the non-empty
	// ones, parsed or not (a version file holds exactly one).
	Docs  []*Doc
	Count int

	broken bool // the file did not read or parse: its problems say why
}

// Doc is one parsed document with where it came from.
type Doc struct {
	// File is the file as shown in problems; Line is where the document
	// starts.
	File string
	Line int
	// Type is the document's type: manifest, providerconfig,
	// reactorbinding or resource.
	Type string
	// Message is the parsed document (see the conctl document package).
	Message proto.Message

	node *yaml.Node
}

// Manifest returns the document's manifest, or nil when it is not one.
func (d *Doc) Manifest() *convergev1.KindManifest {
	m, _ := d.Message.(*convergev1.KindManifest)
	return m
}

// Resource returns the document's resource, or nil when it is not one.
func (d *Doc) Resource() *convergev1.ApplyResourceRequest {
	r, _ := d.Message.(*convergev1.ApplyResourceRequest)
	return r
}

// Stats counts what a catalog holds.
type Stats struct {
	Teams, Kinds, Versions, Examples int
}

// Stats counts the catalog's teams, kinds, versions and examples.
func (c *Catalog) Stats() Stats {
	var s Stats
	s.Teams = len(c.Teams)
	for _, t := range c.Teams {
		s.Kinds += len(t.Kinds)
		for _, k := range t.Kinds {
			s.Versions += len(k.Versions)
			s.Examples += len(k.Examples)
		}
	}
	return s
}

// Kinds returns every kind directory, by team then name.
func (c *Catalog) Kinds() []*Kind {
	var out []*Kind
	for _, t := range c.Teams {
		out = append(out, t.Kinds...)
	}
	return out
}
