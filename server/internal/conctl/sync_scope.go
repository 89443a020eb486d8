package conctl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Labels sync reads and writes on the server's resources.
const (
	// appLabel names the app a resource belongs to. sync stamps it on
	// every resource of the tree and prunes by it.
	appLabel = "converge.dev/app"
	// pruneLabel set to "false" on a resource keeps sync --prune from
	// deleting it.
	pruneLabel = "converge.dev/prune"
)

// appMarkerName is the file that makes a directory the root of an app's tree.
const appMarkerName = "converge.yaml"

// appNamePattern is what an app name may be: a label value that is safe in a
// label selector without quoting.
var appNamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$`)

const maxAppNameLen = 63

// appScope is the app a sync works on: what its marker says and where it is.
type appScope struct {
	markerPath string // path of converge.yaml
	root       string // the directory holding it
	app        string
	namespace  string // default for documents without one; "" = --namespace
}

// markerFile is the content of converge.yaml.
type markerFile struct {
	App       string `yaml:"app"`
	Namespace string `yaml:"namespace"`
}

// findAppScope looks for converge.yaml in dir and then in its ancestors,
// stopping at the first directory that holds .git (the repository's root)
// or at the filesystem root.
func findAppScope(dir string) (*appScope, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	info, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, pathReason(err))
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s: not a directory: sync takes the directory of an app's tree", dir)
	}
	for cur := abs; ; {
		p := filepath.Join(cur, appMarkerName)
		if _, err := os.Stat(p); err == nil {
			return readAppMarker(relToDir(dir, abs, p), cur)
		}
		_, gitErr := os.Stat(filepath.Join(cur, ".git"))
		parent := filepath.Dir(cur)
		if gitErr == nil || parent == cur {
			return nil, fmt.Errorf("%s: no %s in this directory or above it up to %s: "+
				"an app's tree needs one, e.g. \"app: shop\" (and optionally \"namespace: shop\")", dir, appMarkerName, cur)
		}
		cur = parent
	}
}

// relToDir shows p relative to the directory the user named, when p is
// inside it or above it, so messages name paths the user recognises.
func relToDir(dir, absDir, p string) string {
	if rel, err := filepath.Rel(absDir, p); err == nil {
		return filepath.Join(dir, rel)
	}
	return p
}

func readAppMarker(path, root string) (*appScope, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, pathReason(err))
	}
	var m markerFile
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil && !errors.Is(err, io.EOF) {
		return nil, appMarkerError(path, err)
	}
	var errs []error
	switch {
	case m.App == "":
		errs = append(errs, fmt.Errorf("%s: app: required: the name of the app this tree declares, e.g. \"app: shop\"", path))
	case len(m.App) > maxAppNameLen || !appNamePattern.MatchString(m.App):
		errs = append(errs, fmt.Errorf("%s: app: %q is not an app name: 1 to %d characters of a-z, 0-9, '.', '_' and '-', "+
			"starting and ending with a letter or digit", path, m.App, maxAppNameLen))
	}
	if m.Namespace != "" && !appNamespacePattern.MatchString(m.Namespace) {
		errs = append(errs, fmt.Errorf("%s: namespace: %q is not a namespace name: 1 to 63 characters of a-z, 0-9 and '-', "+
			"starting and ending with a letter or digit", path, m.Namespace))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &appScope{markerPath: path, root: root, app: m.App, namespace: m.Namespace}, nil
}

// appMarkerError reports a marker that is not YAML or has fields other than
// app and namespace, one error per problem.
func appMarkerError(path string, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	errs := make([]error, 0, len(te.Errors))
	for _, e := range te.Errors {
		e, _, _ = strings.Cut(e, " in type ")
		errs = append(errs, fmt.Errorf("%s: %s (%s takes app and namespace)", path, e, appMarkerName))
	}
	return errors.Join(errs...)
}

var appNamespacePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// syncFiles lists the document files under dir, sorted by path: .yaml,
// .yml and .json files, skipping names that start with a dot and the
// scope's own marker. A marker deeper in the tree is an error: one sync
// is one app.
func syncFiles(dir string, sc *appScope) ([]string, error) {
	var files []string
	var errs []error
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if d.Name() == appMarkerName {
			abs, err := filepath.Abs(path)
			if err != nil {
				return err
			}
			if filepath.Dir(abs) != sc.root {
				errs = append(errs, fmt.Errorf("%s: a second app marker inside the tree of %s: "+
					"sync each app's tree on its own", path, sc.markerPath))
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			files = append(files, filepath.Clean(path))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, pathReason(err))
	}
	sort.Strings(files)
	return files, errors.Join(errs...)
}

// pathReason drops the path from an OS error whose message already names it.
func pathReason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
