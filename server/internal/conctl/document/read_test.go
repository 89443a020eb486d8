package document_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convergehq/converge/server/internal/conctl/document"
)

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func resourceDoc(name string) string {
	return "type: resource\nkind: greeting\nkind_version: 1\nname: " + name + "\n"
}

func TestReadDirectoryRecursivelyInPathOrder(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "b.yaml"), resourceDoc("b"))
	writeFile(t, filepath.Join(dir, "a", "z.yml"), resourceDoc("az"))
	writeFile(t, filepath.Join(dir, "a", "c.json"), `{"type":"resource","kind":"greeting","kind_version":1,"name":"ac"}`)
	writeFile(t, filepath.Join(dir, "notes.txt"), "not a document")
	writeFile(t, filepath.Join(dir, ".git", "x.yaml"), "broken: [")
	writeFile(t, filepath.Join(dir, ".hidden.yaml"), "broken: [")

	docs, err := document.Read([]string{dir}, nil)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	var got []string
	for _, d := range docs {
		got = append(got, strings.TrimPrefix(d.Source, dir+string(filepath.Separator)))
	}
	want := []string{filepath.Join("a", "c.json"), filepath.Join("a", "z.yml"), "b.yaml"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("sources = %v, want %v", got, want)
	}
}

func TestReadFilesAndStdin(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "one.yaml")
	writeFile(t, file, resourceDoc("one"))
	docs, err := document.Read([]string{file, "-", file}, strings.NewReader(resourceDoc("two")))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if len(docs) != 2 || docs[0].Source != file || docs[1].Source != "stdin" {
		t.Fatalf("docs = %v, want one.yaml then stdin, the repeated file once", docs)
	}
}

func TestReadErrorsNameTheirSource(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, "type: resource\nkind: greeting\nkind_version: 1\nname: x\nlabls: {}\n")
	missing := filepath.Join(dir, "missing.yaml")

	_, err := document.Read([]string{missing, empty, bad, "-", "-"}, strings.NewReader(""))
	want := []string{
		missing + ": no such file or directory",
		empty + ": no .yaml, .yml or .json files in this directory",
		bad + `: document 1 (line 5): unknown field "labls" (did you mean "labels"?)`,
		`stdin: "-" (stdin) is given more than once`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Fatalf("errors:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
	}
}
