package tfgen

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/convergehq/converge/server/kindcheck"
	"github.com/convergehq/converge/stdworker/internal/catalog"
)

// Outcome is what Write did with one kind.
type Outcome struct {
	Kind    string
	Version int
	// Action is "created", "unchanged", "updated" (the version edited in
	// place: the stability checker found the change compatible) or "new
	// version" (it found a breaking change).
	Action string
	// Breaking lists the breaking changes that made a new version.
	Breaking []string
}

func (o Outcome) String() string {
	s := fmt.Sprintf("kind %s/v%d %s", o.Kind, o.Version, o.Action)
	if len(o.Breaking) > 0 {
		s += " (breaking: " + strings.Join(o.Breaking, "; ") + ")"
	}
	return s
}

var versionFile = regexp.MustCompile(`^v([1-9][0-9]*)\.yaml$`)

// Write puts kinds into dir, the catalog directory of team owner:
// <dir>/<kind>/v<N>.yaml, README.md and stdworker.yaml, and an OWNERS
// naming the team when dir has none. A kind that is there already is
// compared with its newest version by the server's stability checker: a
// compatible change edits that version in place, a breaking one is
// written as the next version, and the older versions stay as they are.
func Write(dir, owner string, kinds []Kind, command string) ([]Outcome, error) {
	if base := filepath.Base(filepath.Clean(dir)); base != owner {
		return nil, fmt.Errorf("--out: %s is not team %s's directory: a catalog team directory is named after its team (C10), e.g. catalog/%s", dir, owner, owner)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := writeOwners(dir, owner); err != nil {
		return nil, err
	}
	var out []Outcome
	for _, k := range kinds {
		o, err := writeKind(filepath.Join(dir, k.Manifest.Kind), k, command)
		if err != nil {
			return out, fmt.Errorf("%s: %w", k.Manifest.Kind, err)
		}
		out = append(out, o)
	}
	return out, nil
}

func writeOwners(dir, owner string) error {
	p := filepath.Join(dir, "OWNERS")
	if _, err := os.Stat(p); err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	content := fmt.Sprintf("# Reviewers of team %s's kinds, one a line (written by stdworker kinds generate:\n# replace with the team's handles, groups or SPIFFE IDs).\n@%s\n", owner, owner)
	return os.WriteFile(p, []byte(content), 0o644)
}

// writeKind writes one kind's directory.
func writeKind(kdir string, k Kind, command string) (Outcome, error) {
	m := k.Manifest
	versions, err := existingVersions(kdir)
	if err != nil {
		return Outcome{}, err
	}
	o := Outcome{Kind: m.Kind, Version: 1, Action: "created"}
	if n := len(versions); n > 0 {
		o, err = nextVersion(kdir, m, versions[n-1], command)
		if err != nil {
			return Outcome{}, err
		}
	}
	m.KindVersion = o.Version
	if err := checkLegal(m); err != nil {
		return Outcome{}, err
	}
	if o.Action != "unchanged" {
		raw, err := render(m, command)
		if err != nil {
			return Outcome{}, err
		}
		if err := os.MkdirAll(kdir, 0o755); err != nil {
			return Outcome{}, err
		}
		if err := os.WriteFile(filepath.Join(kdir, fmt.Sprintf("v%d.yaml", o.Version)), raw, 0o644); err != nil {
			return Outcome{}, err
		}
	}
	if o.Version > len(versions) {
		versions = append(versions, o.Version)
	}
	if err := writeServed(kdir, m.Kind, versions); err != nil {
		return Outcome{}, err
	}
	return o, writeReadme(kdir, k, versions, command)
}

// nextVersion decides where m goes when the kind has versions up to
// latest: in place (compatible or equal) or as latest+1 (breaking).
func nextVersion(kdir string, m *Manifest, latest int, command string) (Outcome, error) {
	file := filepath.Join(kdir, fmt.Sprintf("v%d.yaml", latest))
	raw, err := os.ReadFile(file)
	if err != nil {
		return Outcome{}, err
	}
	olds, err := catalog.Parse(raw)
	if err != nil || len(olds) != 1 {
		return Outcome{}, fmt.Errorf("%s: not one manifest (%v): cannot tell whether the new schema breaks it", file, err)
	}
	m.KindVersion = latest
	cur, err := m.Proto()
	if err != nil {
		return Outcome{}, err
	}
	if rendered, err := render(m, command); err == nil && bytes.Equal(rendered, raw) {
		return Outcome{Kind: m.Kind, Version: latest, Action: "unchanged"}, nil
	}
	breaking, err := kindcheck.Breaking(olds[0], cur)
	if err != nil {
		return Outcome{}, fmt.Errorf("comparing with %s: %w", file, err)
	}
	if len(breaking) == 0 {
		return Outcome{Kind: m.Kind, Version: latest, Action: "updated"}, nil
	}
	return Outcome{Kind: m.Kind, Version: latest + 1, Action: "new version", Breaking: breaking}, nil
}

// checkLegal refuses a manifest the server would refuse.
func checkLegal(m *Manifest) error {
	p, err := m.Proto()
	if err != nil {
		return err
	}
	if err := kindcheck.Legal(p); err != nil {
		return fmt.Errorf("the generated manifest is not one the server accepts: %w", err)
	}
	return nil
}

// existingVersions lists the v<N>.yaml in kdir, ascending.
func existingVersions(kdir string) ([]int, error) {
	entries, err := os.ReadDir(kdir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var vs []int
	for _, e := range entries {
		if m := versionFile.FindStringSubmatch(e.Name()); m != nil {
			n, _ := strconv.Atoi(m[1])
			vs = append(vs, n)
		}
	}
	sort.Ints(vs)
	for i, v := range vs {
		if v != i+1 {
			return nil, fmt.Errorf("%s: v%d.yaml is missing: versions are contiguous from v1 (C7)", kdir, i+1)
		}
	}
	return vs, nil
}

// render is a manifest's file.
func render(m *Manifest, command string) ([]byte, error) {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# %s v%d: generated by %s\n# from resource type %s; regenerate rather than edit (docs/stdworker-terraform.md).\n", m.Kind, m.KindVersion, command, m.SpecSchema["x-terraform"].(map[string]any)["type"])
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeServed writes the stdworker entries serving every version.
func writeServed(kdir, kind string, versions []int) error {
	var b strings.Builder
	b.WriteString("# The stdworker entries that serve " + kind + " (written by stdworker kinds generate).\nkinds:\n")
	for _, v := range versions {
		fmt.Fprintf(&b, "  - kind: %s\n    version: %d\n    provider: stdterraform\n", kind, v)
	}
	return os.WriteFile(filepath.Join(kdir, "stdworker.yaml"), []byte(b.String()), 0o644)
}

// writeReadme writes the kind's README, from the newest version.
func writeReadme(kdir string, k Kind, versions []int, command string) error {
	m := k.Manifest
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s\n\nGenerated by `%s`; regenerate rather than edit.\n\n", m.Kind, m.Description, command)
	fmt.Fprintf(&b, "- **Versions:** %s, served by stdworker's `stdterraform` (see [stdworker.yaml](stdworker.yaml)).\n", versionList(versions))
	b.WriteString("- **Spec:** the resource type's arguments (see `spec_schema`), and `import_id` to adopt an existing object.\n")
	b.WriteString("- **Status:** its computed attributes (sensitive ones left out) and `terraform` (applied_at, version, state, address, replaced).\n")
	b.WriteString("- **Provider config:** `provider` (the provider's configuration block), `binary`, `backend`, `env` as for std.terraform.\n\n")
	b.WriteString("How stdterraform runs it: [docs/stdworker-terraform.md](../../../docs/stdworker-terraform.md#kinds-from-a-provider).\n")
	return os.WriteFile(filepath.Join(kdir, "README.md"), []byte(b.String()), 0o644)
}

func versionList(vs []int) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("v%d", v)
	}
	return strings.Join(parts, ", ")
}
