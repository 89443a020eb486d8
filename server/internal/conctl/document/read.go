package document

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

const (
	// StdinPath is the path that stands for standard input in Read.
	StdinPath = "-"
	// Stdin is the Source of documents read from standard input.
	Stdin = "stdin"
)

// Read parses every document in paths, in order. A path is a file, a
// directory (read recursively: its .yaml, .yml and .json files sorted by
// path, skipping names that start with a dot), or "-" for stdin.
//
// Everything is read and checked before Read returns, so callers can refuse
// to act on a set of inputs of which any part is wrong. The error joins one
// *Error per problem found.
func Read(paths []string, stdin io.Reader, opts ...Option) ([]*Document, error) {
	o := newOptions(opts)
	var errs errorList
	var docs []*Document
	seen := map[string]bool{}
	for _, p := range paths {
		files, err := expand(p)
		if err != nil {
			errs.add(err)
			continue
		}
		for _, f := range files {
			if seen[f] {
				if f == StdinPath {
					errs.add(&Error{Source: Stdin, Message: `"-" (stdin) is given more than once`})
				}
				continue
			}
			seen[f] = true
			source, data, err := load(f, stdin)
			if err != nil {
				errs.add(err)
				continue
			}
			docs = append(docs, parse(source, data, o, &errs)...)
		}
	}
	return docs, errs.err()
}

// expand lists the files a path stands for.
func expand(p string) ([]string, *Error) {
	if p == StdinPath {
		return []string{StdinPath}, nil
	}
	info, err := os.Stat(p)
	if err != nil {
		return nil, &Error{Source: p, Message: reason(err)}
	}
	if !info.IsDir() {
		return []string{filepath.Clean(p)}, nil
	}
	var files []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != p && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			if !d.IsDir() {
				files = append(files, filepath.Clean(path))
			}
		}
		return nil
	})
	if err != nil {
		return nil, &Error{Source: p, Message: reason(err)}
	}
	if len(files) == 0 {
		return nil, &Error{Source: p, Message: "no .yaml, .yml or .json files in this directory"}
	}
	sort.Strings(files)
	return files, nil
}

// load reads one file (or stdin), refusing more than MaxFileSize bytes.
func load(path string, stdin io.Reader) (string, []byte, *Error) {
	source := path
	var r io.Reader
	if path == StdinPath {
		source = Stdin
		if stdin == nil {
			return source, nil, &Error{Source: source, Message: "no standard input"}
		}
		r = stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return source, nil, &Error{Source: source, Message: reason(err)}
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return source, nil, &Error{Source: source, Message: reason(err)}
	}
	if len(data) > MaxFileSize {
		return source, nil, tooBig(source)
	}
	return source, data, nil
}

// reason is an OS error without the path, which the Error already names.
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
