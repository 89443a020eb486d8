package stdstarlark

import (
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"go.starlark.net/starlark"
)

// BundleError is why a bundle does not load, located in the bundle.
type BundleError struct {
	// File is the bundle file the problem is in, relative to the bundle
	// directory; "" when the problem is the bundle's as a whole.
	File string
	// Line and Column locate the problem in File, from 1; 0 when unknown.
	Line, Column int
	// Message says what is wrong.
	Message string
}

// Error renders the problem as "file:line:col: message".
func (e *BundleError) Error() string {
	switch {
	case e.File == "":
		return e.Message
	case e.Line == 0:
		return e.File + ": " + e.Message
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Message)
}

// CheckBundle loads a bundle offline, the way the provider does before every
// task: main (DefaultMain when empty) and every file it loads are parsed,
// resolved and run (top level only, within DefaultMaxSteps), and main must
// define compose(ctx). fsys is the bundle directory. It calls neither
// compose nor rollup. The error, if any, is a *BundleError.
func CheckBundle(fsys fs.FS, main string) error {
	if main == "" {
		main = DefaultMain
	}
	clean := path.Clean(main)
	if !filepath.IsLocal(clean) || path.Ext(clean) != ".star" {
		return &BundleError{Message: fmt.Sprintf("main: %q must be a .star file inside the bundle", main)}
	}
	l := &loader{files: fsys, programs: &programs{}, modules: map[string]*module{}}
	thread := &starlark.Thread{Name: "check", Load: l.load, Print: func(*starlark.Thread, string) {}}
	thread.SetMaxExecutionSteps(DefaultMaxSteps)
	thread.OnMaxSteps = func(th *starlark.Thread) { th.Cancel("step limit") }
	globals, err := l.exec(thread, clean)
	if err != nil {
		return bundleError(clean, err)
	}
	v, ok := globals["compose"]
	if !ok {
		return &BundleError{File: clean, Message: "defines no compose(ctx) function"}
	}
	f, ok := v.(*starlark.Function)
	if !ok {
		return &BundleError{File: clean, Message: fmt.Sprintf("compose is a %s, not a function", v.Type())}
	}
	if f.NumParams() != 1 {
		pos := f.Position()
		return &BundleError{File: pos.Filename(), Line: int(pos.Line), Column: int(pos.Col),
			Message: fmt.Sprintf("compose(ctx) must take exactly one parameter, not %d", f.NumParams())}
	}
	return nil
}

// bundleError locates a Starlark error; main is where an error without a
// position is reported.
func bundleError(main string, err error) *BundleError {
	msg := describe(err)
	pos, ok := position(err)
	if !ok {
		return &BundleError{File: main, Message: msg}
	}
	msg = strings.TrimPrefix(msg, pos.String()+": ")
	return &BundleError{File: pos.Filename(), Line: int(pos.Line), Column: int(pos.Col), Message: msg}
}
