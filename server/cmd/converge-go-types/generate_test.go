package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// goldens are the generator's inputs under testdata with the command
// lines they are generated with; each output is compared with
// testdata/<name>.go.golden.
var goldens = []struct {
	name string
	args []string
}{
	{"schemas", []string{"-package", "demo", "schemas.yaml"}},
	{"versions", []string{"--package", "demo", "versions.yaml"}},
	{"versions-nosdk", []string{"--package", "demo", "--sdk", "", "versions.yaml"}},
	{"othersdk", []string{"--package", "demo", "--sdk", "example.com/fork/sdk-v2", "versions.yaml"}},
}

func TestGolden(t *testing.T) {
	for _, g := range goldens {
		t.Run(g.name, func(t *testing.T) {
			got := generateIn(t, "testdata", g.args)
			file := filepath.Join("testdata", g.name+".go.golden")
			if *update {
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the generator's output (go test ./server/cmd/converge-go-types -update rewrites it):\n%s", file, diff(string(want), string(got)))
			}
		})
	}
}

// generateIn runs the generator as the command line args would, with
// files relative to dir.
func generateIn(t *testing.T, dir string, args []string) []byte {
	t.Helper()
	c, err := parseArgs(args)
	if err != nil {
		t.Fatal(err)
	}
	src, err := c.generateFiles(dir, nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// diff shows the first lines where a and b differ.
func diff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + strconv.Itoa(i+1) + ":\n- " + x + "\n+ " + y
		}
	}
	return "(same lines)"
}
