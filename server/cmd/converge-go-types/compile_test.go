package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// repoRoot is the repository, two levels above this package.
var repoRoot = filepath.Join("..", "..", "..")

// TestGeneratedCodeCompiles type-checks the generator's output for the
// golden inputs and for every kind manifest in the repository's examples
// and catalog, against the real SDK.
func TestGeneratedCodeCompiles(t *testing.T) {
	inputs := map[string][]string{} // dir → args
	for _, g := range goldens {
		if g.name != "othersdk" {
			inputs["testdata "+g.name] = append([]string{"testdata"}, g.args...)
		}
	}
	var files []string
	for _, pattern := range []string{"sdk-go/examples/*/*.yaml", "stdworker/examples/*/kinds.yaml", "catalog/*/*/v*.yaml"} {
		m, err := filepath.Glob(filepath.Join(repoRoot, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	manifests := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := readManifests(f, data)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) > 0 {
			manifests += len(ms)
			inputs[f] = []string{filepath.Dir(f), "-package", "kinds", filepath.Base(f)}
		}
	}
	if manifests < 15 {
		t.Fatalf("found %d manifests in the repository; the globs are stale", manifests)
	}
	for name, args := range inputs {
		t.Run(name, func(t *testing.T) {
			src := generateIn(t, args[0], args[1:])
			if err := typeCheck(src); err != nil {
				t.Fatalf("%v\n%s", err, numbered(src))
			}
		})
	}
}

// typeCheck type-checks one generated file as a package of its own.
func typeCheck(src []byte) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "kinds_gen.go", src, parser.ParseComments)
	if err != nil {
		return err
	}
	exports, err := exportData()
	if err != nil {
		return err
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	var errs []string
	conf := types.Config{Importer: imp, Error: func(err error) { errs = append(errs, err.Error()) }}
	conf.Check("kinds", fset, []*ast.File{f}, nil)
	if len(errs) > 0 {
		return fmt.Errorf("does not compile:\n%s", strings.Join(errs, "\n"))
	}
	return nil
}

var exportOnce = sync.OnceValues(func() (map[string]string, error) {
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}", defaultSDK)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export %s: %w", defaultSDK, err)
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), " "); ok && file != "" {
			m[path] = file
		}
	}
	return m, sc.Err()
})

// exportData maps the import paths the generated code may use to their
// compiled export data.
func exportData() (map[string]string, error) { return exportOnce() }

func numbered(src []byte) string {
	var b strings.Builder
	for i, l := range strings.Split(string(src), "\n") {
		fmt.Fprintf(&b, "%4d  %s\n", i+1, l)
	}
	return b.String()
}

// TestTypeCheckCatchesErrors: the check above can fail.
func TestTypeCheckCatchesErrors(t *testing.T) {
	for _, src := range []string{
		"package kinds\n\ntype Node struct{ Parent Node }\n",
		"package kinds\n\nimport \"github.com/convergehq/converge/sdk-go/converge\"\n\nvar _ converge.NoSuchThing\n",
	} {
		if err := typeCheck([]byte(src)); err == nil {
			t.Errorf("no error for\n%s", src)
		}
	}
}
