//go:build unix

package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// catalogKind is one kind directory of catalog/ (catalog/<team>/<kind>), as
// catalog/README.md lays it out.
type catalogKind struct {
	team, name, dir string
	graphs          []string // v<N>.yaml files holding a std.graph resource
	examples        []string // examples/*.yaml
	stdworker       string   // stdworker.yaml, "" when the kind has none
}

var versionFile = regexp.MustCompile(`^v[1-9][0-9]*\.yaml$`)

// readCatalog reads the kind directories of the repository's catalog/, in
// path order.
func readCatalog(t *testing.T) []*catalogKind {
	t.Helper()
	root := repoPath(t, "catalog")
	kindDirs, err := filepath.Glob(filepath.Join(root, "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(kindDirs)
	var kinds []*catalogKind
	for _, dir := range kindDirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		k := &catalogKind{team: filepath.Base(filepath.Dir(dir)), name: filepath.Base(dir), dir: dir}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() || !versionFile.MatchString(e.Name()) {
				continue
			}
			f := filepath.Join(dir, e.Name())
			switch typ := documentType(t, f); typ {
			case "manifest":
			case "resource":
				k.graphs = append(k.graphs, f)
			default:
				t.Fatalf("%s: type %q: a kind version is a manifest or a std.graph resource", f, typ)
			}
		}
		k.examples = yamlFiles(t, filepath.Join(dir, "examples"))
		if _, err := os.Stat(filepath.Join(dir, "stdworker.yaml")); err == nil {
			k.stdworker = filepath.Join(dir, "stdworker.yaml")
		}
		kinds = append(kinds, k)
	}
	if len(kinds) == 0 {
		t.Fatalf("no kind directories under %s", root)
	}
	return kinds
}

// yamlFiles lists dir/*.yaml in path order; none when dir does not exist.
func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

// readDocs decodes every YAML document of a file.
func readDocs(t *testing.T, file string) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: document %d: %v", file, len(docs)+1, err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

// documentType is the "type" of a file that must hold one document.
func documentType(t *testing.T, file string) string {
	t.Helper()
	docs := readDocs(t, file)
	if len(docs) != 1 {
		t.Fatalf("%s: %d documents; a kind version is exactly one", file, len(docs))
	}
	typ, _ := docs[0]["type"].(string)
	return typ
}

// servedBy merges the stdworker.yaml entries of every kind into one
// stdworker configuration: paths made absolute against the kind's
// directory, stdio programs run in it with TMPDIR set to tmp (the scripts
// keep their simulated clouds there). An entry named by several kinds
// (std.graph by every graph-defined kind) appears once; two different
// entries for one kind version fail the test.
func servedBy(t *testing.T, kinds []*catalogKind, tmp string) (config []byte, served map[string]bool) {
	t.Helper()
	type entry struct {
		from  string
		value map[string]any
	}
	byKey := map[string]entry{}
	var order []string
	for _, k := range kinds {
		if k.stdworker == "" {
			continue
		}
		docs := readDocs(t, k.stdworker)
		if len(docs) != 1 {
			t.Fatalf("%s: %d documents, want one", k.stdworker, len(docs))
		}
		list, ok := docs[0]["kinds"].([]any)
		if !ok || len(list) == 0 {
			t.Fatalf("%s: kinds: want a list of entries", k.stdworker)
		}
		for i, raw := range list {
			e, ok := raw.(map[string]any)
			if !ok {
				t.Fatalf("%s: kinds[%d]: not a mapping", k.stdworker, i)
			}
			resolvePaths(t, e, k.dir, tmp)
			key := fmt.Sprintf("%v@%v", e["kind"], e["version"])
			if prev, ok := byKey[key]; ok {
				if !reflect.DeepEqual(prev.value, e) {
					t.Fatalf("%s: kinds[%d]: %s is served differently by %s", k.stdworker, i, key, prev.from)
				}
				continue
			}
			byKey[key] = entry{from: k.stdworker, value: e}
			order = append(order, key)
		}
	}
	merged := make([]map[string]any, 0, len(order))
	served = map[string]bool{}
	for _, key := range order {
		merged = append(merged, byKey[key].value)
		served[key] = true
	}
	out, err := yaml.Marshal(map[string]any{"kinds": merged})
	if err != nil {
		t.Fatal(err)
	}
	return out, served
}

// resolvePaths makes an entry's relative paths absolute against dir, the
// way stdworker resolves them against its configuration file's directory.
func resolvePaths(t *testing.T, e map[string]any, dir, tmp string) {
	t.Helper()
	settings, _ := e["settings"].(map[string]any)
	if settings == nil {
		settings = map[string]any{}
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	if d, ok := settings["dir"].(string); ok {
		settings["dir"] = abs(d)
	}
	if e["provider"] == "stdterraform" {
		// Generated kinds (catalog/tf-time) run the real terraform, with
		// providers from the mirror the tests build, never downloaded.
		_, rc := providerMirror(t)
		settings["binary"] = findTerraform(t)
		settings["env"] = map[string]any{"TF_CLI_CONFIG_FILE": rc}
	}
	if e["provider"] != "stdio" {
		if len(settings) > 0 {
			e["settings"] = settings
		}
		return
	}
	if cmd, ok := settings["command"].([]any); ok && len(cmd) > 0 {
		if prog, ok := cmd[0].(string); ok && strings.Contains(prog, "/") {
			cmd[0] = abs(prog)
		}
	}
	if _, ok := settings["dir"]; !ok {
		settings["dir"] = dir
	}
	env, _ := settings["env"].(map[string]any)
	if env == nil {
		env = map[string]any{}
	}
	env["TMPDIR"] = tmp
	settings["env"] = env
	e["settings"] = settings
}
