package stdstarlark_test

import (
	"errors"
	"os"
	"testing"
	"testing/fstest"

	"github.com/convergehq/converge/stdworker/stdstarlark"
)

func TestCheckBundle(t *testing.T) {
	if err := stdstarlark.CheckBundle(os.DirFS("testdata/bundle"), ""); err != nil {
		t.Fatalf("testdata/bundle: %v", err)
	}
	for _, tc := range []struct {
		name  string
		files fstest.MapFS
		want  string
	}{
		{"syntax error", fstest.MapFS{"main.star": {Data: []byte("def compose(ctx)\n    return {}\n")}},
			"main.star:2:1: got newline, want ':'"},
		{"missing load", fstest.MapFS{"main.star": {Data: []byte("load(\"lib/x.star\", \"f\")\ndef compose(ctx):\n    return {}\n")}},
			"main.star:1:1: cannot load lib/x.star: lib/x.star: no such file in the bundle"},
		{"undefined name in a loaded file", fstest.MapFS{
			"main.star":  {Data: []byte("load(\"lib/a.star\", \"f\")\ndef compose(ctx):\n    return f()\n")},
			"lib/a.star": {Data: []byte("def f():\n    return nope\n")}},
			"main.star:1:1: cannot load lib/a.star: lib/a.star:2:12: undefined: nope"},
		{"no compose", fstest.MapFS{"main.star": {Data: []byte("x = 1\n")}},
			"main.star: defines no compose(ctx) function"},
		{"compose not a function", fstest.MapFS{"main.star": {Data: []byte("compose = 1\n")}},
			"main.star: compose is a int, not a function"},
		{"compose arity", fstest.MapFS{"main.star": {Data: []byte("def compose():\n    return {}\n")}},
			"main.star:1:1: compose(ctx) must take exactly one parameter, not 0"},
		{"top-level failure", fstest.MapFS{"main.star": {Data: []byte("fail(\"boom\")\n")}},
			"main.star:1:5: fail: boom"},
		{"no main", fstest.MapFS{}, "main.star: main.star: no such file in the bundle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := stdstarlark.CheckBundle(tc.files, "")
			var be *stdstarlark.BundleError
			if !errors.As(err, &be) {
				t.Fatalf("got %v, want a *BundleError", err)
			}
			if got := err.Error(); got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
	if err := stdstarlark.CheckBundle(fstest.MapFS{}, "../main.star"); err == nil || err.Error() != `main: "../main.star" must be a .star file inside the bundle` {
		t.Fatalf("outside main: %v", err)
	}
}
