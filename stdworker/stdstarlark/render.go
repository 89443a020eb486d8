package stdstarlark

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"

	"github.com/convergehq/converge/sdk-go/converge"
)

// Render runs a bundle's compose(ctx) for the resource t describes, as a
// worker serving the kind would, outside any worker: what conctl render
// shows. main is the bundle's main file ("" = DefaultMain); the run has the
// default step budget.
func Render(ctx context.Context, dir, main string, t *converge.Task) (*converge.Result, error) {
	if main == "" {
		main = DefaultMain
	}
	if clean := path.Clean(main); !filepath.IsLocal(clean) || path.Ext(clean) != ".star" {
		return nil, fmt.Errorf("%q must be a .star file inside the bundle", main)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(filepath.Join(abs, main)); err != nil || fi.IsDir() {
		return nil, fmt.Errorf("%s is not a file of the bundle %s", main, abs)
	}
	p := &program{dir: abs, main: path.Clean(main), maxSteps: DefaultMaxSteps, programs: &programs{}, log: slog.New(slog.DiscardHandler)}
	return p.composeHandler(true)(ctx, t)
}
