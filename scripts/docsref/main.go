// Command docsref generates the reference pages of the documentation site
// from the code itself, so they cannot fall behind it: the command-line
// reference of conctl, converge and stdworker (walking each binary's cobra
// tree with `help`), and the API reference (the OpenAPI document the server
// serves, and the Connect services of the generated Go registry).
//
//	go run ./scripts/docsref                 write docs/reference/*.md
//	go run ./scripts/docsref -check          fail if they differ from what would be written
//
// Run it from the repository root; scripts/docs.sh does.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

func main() {
	root := flag.String("root", ".", "repository root")
	check := flag.Bool("check", false, "compare with the committed pages instead of writing them")
	flag.Parse()
	if err := run(*root, *check); err != nil {
		fmt.Fprintln(os.Stderr, "docsref:", err)
		os.Exit(1)
	}
}

func run(root string, check bool) error {
	pages, err := generate(root)
	if err != nil {
		return err
	}
	dir := filepath.Join(root, refDir)
	if check {
		stale := drift(dir, pages)
		if len(stale) > 0 {
			return fmt.Errorf("%s is out of date (%v); run scripts/docs.sh (or go run ./scripts/docsref) and commit the result", refDir, stale)
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	for _, name := range sortedNames(pages) {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pages[name], 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}

// refDir holds the generated pages, relative to the repository root.
const refDir = "docs/reference"

// drift names each page whose committed file is missing or differs.
func drift(dir string, pages map[string][]byte) []string {
	var stale []string
	for _, name := range sortedNames(pages) {
		have, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(have, pages[name]) {
			stale = append(stale, filepath.ToSlash(filepath.Join(refDir, name)))
		}
	}
	return stale
}

// generate builds the binaries it documents and renders every page, keyed by
// file name inside refDir.
func generate(root string) (map[string][]byte, error) {
	bin, err := os.MkdirTemp("", "docsref-bin-")
	if err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	defer os.RemoveAll(bin)
	pages := map[string][]byte{}
	for _, c := range commands {
		exe, err := buildCommand(root, bin, c.pkg)
		if err != nil {
			return nil, err
		}
		page, err := cliPage(c, exe)
		if err != nil {
			return nil, err
		}
		pages[c.name+".md"] = page
	}
	api, err := apiPage(filepath.Join(root, openAPIPath))
	if err != nil {
		return nil, err
	}
	pages["api.md"] = api
	pages["index.md"] = indexPage()
	return pages, nil
}

func sortedNames(pages map[string][]byte) []string {
	names := make([]string, 0, len(pages))
	for n := range pages {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
