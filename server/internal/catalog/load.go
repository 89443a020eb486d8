package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/convergehq/converge/server/internal/conctl/document"
)

// Option configures Load.
type Option func(*loadOptions)

type loadOptions struct {
	show      func(rel string) string
	namespace string
}

// WithNamespace sets the namespace of resource documents (graphs and
// examples) that name none; the default is "default".
func WithNamespace(ns string) Option {
	return func(o *loadOptions) { o.namespace = ns }
}

// WithSourceDir shows files in problems under dir (joined with the OS's
// separator) instead of under the root given to Load: for a catalog read
// through os.DirFS(dir), so that problems name files relative to the
// current directory.
func WithSourceDir(dir string) Option {
	return func(o *loadOptions) {
		o.show = func(rel string) string {
			if rel == "." {
				return filepath.Clean(dir)
			}
			return filepath.Join(dir, filepath.FromSlash(rel))
		}
	}
}

var (
	teamPattern    = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	versionPattern = regexp.MustCompile(`^v([0-9]+)\.yaml$`)
)

// Names of the parts of a kind directory.
const (
	readmeFile  = "README.md"
	ownersFile  = "OWNERS"
	examplesDir = "examples"
	configsDir  = "configs"
	bindingsDir = "bindings"
	bundleMain  = "main.star"
)

// maxFileSize bounds one file of the catalog.
const maxFileSize = document.MaxFileSize

// Load reads the catalog under root in fsys. It fails only when root is not
// a readable directory: an unreadable or unparsable file is a problem that
// Check reports with the others. Files are shown in problems as
// path.Join(root, rel) unless an option says otherwise.
func Load(fsys fs.FS, root string, opts ...Option) (*Catalog, error) {
	root = path.Clean(root)
	o := &loadOptions{show: func(rel string) string { return path.Join(root, rel) }}
	for _, opt := range opts {
		opt(o)
	}
	entries, err := fs.ReadDir(fsys, root)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", o.show("."), unwrapPath(err))
	}
	l := &loader{fsys: fsys, root: root, show: o.show, namespace: o.namespace, c: &Catalog{fsys: fsys}}
	for _, e := range entries {
		if hidden(e.Name()) || !e.IsDir() {
			continue
		}
		if !teamPattern.MatchString(e.Name()) {
			l.problem(Problem{File: o.show(e.Name()), Rule: RulePlacement,
				Message: fmt.Sprintf("%q is not a team name: lower-case letters, digits and '-', starting with a letter", e.Name())})
			continue
		}
		l.c.Teams = append(l.c.Teams, l.team(e.Name()))
	}
	return l.c, nil
}

// loader reads one catalog tree.
type loader struct {
	fsys      fs.FS
	root      string
	show      func(rel string) string
	namespace string
	c         *Catalog
}

func (l *loader) problem(p Problem) { l.c.problems = append(l.c.problems, p) }

func (l *loader) full(rel string) string { return path.Join(l.root, rel) }

// rel turns an fsys path under the root back into one relative to it.
func (l *loader) rel(full string) string {
	if l.root == "." {
		return full
	}
	return strings.TrimPrefix(full, l.root+"/")
}

func hidden(name string) bool { return strings.HasPrefix(name, ".") }

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (l *loader) team(name string) *Team {
	t := &Team{Name: name, Dir: l.show(name), OwnersFile: l.show(path.Join(name, ownersFile))}
	entries, err := fs.ReadDir(l.fsys, l.full(name))
	if err != nil {
		l.problem(Problem{File: t.Dir, Rule: RulePlacement, Message: "cannot read the directory: " + unwrapPath(err).Error()})
		return t
	}
	for _, e := range entries {
		switch {
		case hidden(e.Name()):
		case e.Name() == ownersFile && !e.IsDir():
			t.HasOwners = true
			if data, ok := l.read(path.Join(name, ownersFile)); ok {
				t.Owners = l.parseOwners(t.OwnersFile, data)
			}
		case e.IsDir():
			t.Kinds = append(t.Kinds, l.kind(name, e.Name()))
		}
	}
	return t
}

// parseOwners returns the owners of an OWNERS file: one a line, without
// blank lines and # comments. A line holding more than one word is a
// problem (C8) at its line.
func (l *loader) parseOwners(shown string, data []byte) []string {
	var owners []string
	for i, line := range strings.Split(string(data), "\n") {
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case len(strings.Fields(line)) > 1:
			l.problem(Problem{File: shown, Line: i + 1, Rule: RuleOwners,
				Message: fmt.Sprintf("%q: one owner per line", line)})
		default:
			owners = append(owners, line)
		}
	}
	return owners
}

func (l *loader) kind(team, name string) *Kind {
	dir := path.Join(team, name)
	k := &Kind{Name: name, Team: team, Dir: l.show(dir)}
	entries, err := fs.ReadDir(l.fsys, l.full(dir))
	if err != nil {
		l.problem(Problem{File: k.Dir, Rule: RulePlacement, Message: "cannot read the directory: " + unwrapPath(err).Error()})
		return k
	}
	for _, e := range entries {
		rel := path.Join(dir, e.Name())
		switch {
		case hidden(e.Name()):
		case e.IsDir():
			switch e.Name() {
			case examplesDir:
				k.Examples = l.docsIn(rel)
			case configsDir:
				k.Configs = l.docsIn(rel)
			case bindingsDir:
				k.Bindings = l.docsIn(rel)
			}
		case e.Name() == readmeFile:
			k.HasReadme = true
		case versionPattern.MatchString(e.Name()):
			digits := versionPattern.FindStringSubmatch(e.Name())[1]
			n, err := strconv.Atoi(digits)
			if err != nil || n < 1 || strconv.Itoa(n) != digits {
				k.BadVersionFiles = append(k.BadVersionFiles, l.show(rel))
				continue
			}
			v := &Version{N: n, File: l.show(rel)}
			before := len(l.c.problems)
			v.Docs, v.Count = l.parse(rel)
			v.broken = len(l.c.problems) > before
			k.Versions = append(k.Versions, v)
		}
	}
	slices.SortFunc(k.Versions, func(a, b *Version) int { return a.N - b.N })
	for _, b := range l.bundles(dir) {
		k.Bundles = append(k.Bundles, l.full(b))
		k.bundleShown = append(k.bundleShown, l.show(b))
	}
	return k
}

// docsIn parses every .yaml and .yml file directly in dir.
func (l *loader) docsIn(dir string) []*Doc {
	entries, err := fs.ReadDir(l.fsys, l.full(dir))
	if err != nil {
		l.problem(Problem{File: l.show(dir), Rule: RulePlacement, Message: "cannot read the directory: " + unwrapPath(err).Error()})
		return nil
	}
	var docs []*Doc
	for _, e := range entries {
		ext := path.Ext(e.Name())
		if e.IsDir() || hidden(e.Name()) || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		ds, _ := l.parse(path.Join(dir, e.Name()))
		docs = append(docs, ds...)
	}
	return docs
}

// bundles lists the directories under a kind directory holding a
// main.star, relative to the root.
func (l *loader) bundles(dir string) []string {
	var out []string
	_ = fs.WalkDir(l.fsys, l.full(dir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable directory holds no bundle we can check
		}
		if d.IsDir() && p != l.full(dir) && hidden(d.Name()) {
			return fs.SkipDir
		}
		if !d.IsDir() && d.Name() == bundleMain {
			out = append(out, l.rel(path.Dir(p)))
		}
		return nil
	})
	return out
}

// read reads a file of the catalog, reporting why it cannot.
func (l *loader) read(rel string) ([]byte, bool) {
	f, err := l.fsys.Open(l.full(rel))
	if err != nil {
		l.problem(Problem{File: l.show(rel), Rule: RulePlacement, Message: "cannot read the file: " + unwrapPath(err).Error()})
		return nil, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		l.problem(Problem{File: l.show(rel), Rule: RulePlacement, Message: "cannot read the file: " + unwrapPath(err).Error()})
		return nil, false
	}
	if len(data) > maxFileSize {
		l.problem(Problem{File: l.show(rel), Rule: RulePlacement, Message: fmt.Sprintf("larger than %d bytes", maxFileSize)})
		return nil, false
	}
	return data, true
}

// parse parses the documents of a file with the conctl document parser,
// turning its errors into problems, and counts the file's non-empty
// documents.
func (l *loader) parse(rel string) ([]*Doc, int) {
	data, ok := l.read(rel)
	if !ok {
		return nil, 0
	}
	shown := l.show(rel)
	parsed, err := document.Parse(shown, data, document.WithDefaultNamespace(l.namespace))
	l.parseProblems(shown, err)
	nodes := yamlDocuments(data)
	docs := make([]*Doc, 0, len(parsed))
	for _, d := range parsed {
		doc := &Doc{File: shown, Line: d.Line, Type: d.Type, Message: d.Message}
		if d.Index-1 < len(nodes) {
			doc.node = nodes[d.Index-1]
		}
		docs = append(docs, doc)
	}
	count := 0
	for _, n := range nodes {
		if n != nil {
			count++
		}
	}
	return docs, max(count, len(docs))
}

// parseProblems turns the document parser's errors into problems.
func (l *loader) parseProblems(shown string, err error) {
	if err == nil {
		return
	}
	errs := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs = joined.Unwrap()
	}
	for _, e := range errs {
		var de *document.Error
		if errors.As(e, &de) {
			l.problem(Problem{File: shown, Line: de.Line, Rule: RulePlacement, Message: "not a valid document: " + de.Message})
			continue
		}
		l.problem(Problem{File: shown, Rule: RulePlacement, Message: "not a valid document: " + e.Error()})
	}
}

// yamlDocuments decodes the YAML documents of data, one node per document
// (nil for an empty one), stopping at the first error, which the document
// parser reports.
func yamlDocuments(data []byte) (nodes []*yaml.Node) {
	defer func() {
		// The decoder is third-party code reading untrusted input; a panic
		// in it must not take the check down (the parser reports the file).
		if recover() != nil {
			nodes = nil
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	for len(nodes) < 10000 {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			break
		}
		if n.Kind == yaml.DocumentNode && len(n.Content) == 1 && !isNull(n.Content[0]) {
			nodes = append(nodes, n.Content[0])
		} else {
			nodes = append(nodes, nil)
		}
	}
	return nodes
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}
