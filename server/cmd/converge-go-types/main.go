// Command converge-go-types generates Go types and constants from kind
// manifests, the Go counterpart of converge-ts-types:
//
//	//go:generate go run github.com/convergehq/converge/server/cmd/converge-go-types -o kinds_gen.go -package main greeting.yaml
//
// For every manifest (a document with "type: manifest"; resources and
// other documents in the files are skipped) it writes structs for the
// spec, status and provider config schemas and each operation's input
// schema, constants for the kind's name, version, reactions, their
// triggers and its operation verbs, and typed registration helpers for
// the Go SDK (converge.Handle). docs/workers.md ("Typed handlers")
// describes the output.
//
// It lives in the server's module, not in sdk-go, because manifests are
// YAML and the SDK takes no YAML dependency; it reads them with the same
// parser as conctl, so it accepts and refuses exactly what conctl apply
// does.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/convergehq/converge/server/internal/conctl/document"
)

const usage = `usage: converge-go-types [-o OUT.go] [--package NAME] [--sdk IMPORTPATH] MANIFEST.yaml...

Writes Go types for the spec, status, config and operation inputs of every
kind manifest (documents with "type: manifest") in the files, with
constants for its kind, version, reactions, triggers and verbs, to OUT.go
or standard output ("-" reads standard input). --package names the
package (default: $GOPACKAGE, as go generate sets it, else the name of
OUT.go's directory, else "kinds"). --sdk is the import path of the Go
SDK's converge package, used by the typed Handle helpers (default
` + defaultSDK + `; "" for no helpers).`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

// config is a parsed command line.
type config struct {
	out, pkg, sdk string
	files         []string
	help          bool
}

// parseArgs reads the command line; flags may come anywhere, in -x or --x
// form, as converge-ts-types takes them.
func parseArgs(args []string) (config, error) {
	c := config{sdk: defaultSDK}
	value := func(i *int, flag string) (string, error) {
		if *i+1 >= len(args) {
			return "", fmt.Errorf("%s needs a value", flag)
		}
		*i++
		return args[*i], nil
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		var err error
		switch a {
		case "-h", "--help", "-help":
			c.help = true
		case "-o", "--out", "-out":
			c.out, err = value(&i, a)
			if err == nil && c.out == "" {
				err = fmt.Errorf("%s needs a file name", a)
			}
		case "-p", "--package", "-package":
			c.pkg, err = value(&i, a)
		case "--sdk", "-sdk":
			c.sdk, err = value(&i, a)
		default:
			if strings.HasPrefix(a, "-") && a != "-" {
				err = fmt.Errorf("unknown flag %s", a)
			}
			c.files = append(c.files, a)
		}
		if err != nil {
			return c, err
		}
	}
	if !c.help && len(c.files) == 0 {
		return c, errors.New("no manifest file given")
	}
	return c, nil
}

// packageName picks the generated file's package.
func (c config) packageName(getenv func(string) string) string {
	if c.pkg != "" {
		return c.pkg
	}
	if p := getenv("GOPACKAGE"); p != "" {
		return p
	}
	if c.out != "" {
		if abs, err := filepath.Abs(c.out); err == nil {
			if d := filepath.Base(filepath.Dir(abs)); isIdentifier(d) {
				return d
			}
		}
	}
	return "kinds"
}

// generateFiles reads the files (relative to dir) and generates their
// code.
func (c config) generateFiles(dir string, stdin io.Reader, getenv func(string) string) ([]byte, error) {
	var ms []manifest
	for _, f := range c.files {
		var data []byte
		var err error
		source := f
		if f == "-" {
			source = document.Stdin
			data, err = io.ReadAll(io.LimitReader(stdin, document.MaxFileSize+1))
		} else {
			p := f
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			data, err = os.ReadFile(p)
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		found, err := readManifests(source, data)
		if err != nil {
			return nil, err
		}
		ms = append(ms, found...)
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf(`no manifest (a document with "type: manifest") in %s`, strings.Join(c.files, ", "))
	}
	if err := dedupe(ms); err != nil {
		return nil, err
	}
	return generate(ms, options{Package: c.packageName(getenv), Source: strings.Join(c.files, ", "), SDK: c.sdk})
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "converge-go-types: %v\n\n%s\n", err, usage)
		return 2
	}
	c, err := parseArgs(args)
	if err != nil {
		return fail(err)
	}
	if c.help {
		fmt.Fprintln(stdout, usage)
		return 0
	}
	src, err := c.generateFiles(".", stdin, getenv)
	if err != nil {
		return fail(err)
	}
	if c.out == "" {
		_, err = stdout.Write(src)
	} else if err = os.MkdirAll(filepath.Dir(c.out), 0o755); err == nil {
		// The output's directory is made, as converge-ts-types does.
		err = os.WriteFile(c.out, src, 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "converge-go-types: %v\n", err)
		return 1
	}
	return 0
}
