// Package provider defines what a stdworker provider is: a way to serve a
// kind version (its reactions) without writing an SDK worker. stdworker runs
// one SDK worker per served kind version, so each kind gets its own stream,
// capacity and drain; a provider only registers handlers on it.
package provider

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/convergehq/converge/sdk-go/client"
	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// Served is one kind version a provider serves.
type Served struct {
	// Manifest is the kind version's manifest as the server holds it; a
	// provider registers a handler for each reaction it can serve and
	// refuses (Register returns an error) a reaction it cannot.
	Manifest *convergev1.KindManifest
	// Settings are the provider's settings for this kind from the stdworker
	// configuration file (for stdio: the command to run), as JSON; empty when
	// the file gives none. Settings that may change at run time belong in the
	// kind's provider config instead (Task.Config).
	Settings json.RawMessage
}

// Env is what stdworker gives every provider.
type Env struct {
	Log *slog.Logger
	// Control is a client of the server's control API (read kinds, apply
	// kinds and resources).
	Control *client.Client
	// StateDir is a directory the provider may keep files in across tasks
	// and restarts (for example Terraform working directories); it exists.
	StateDir string
	// Serve starts serving another kind version at run time with provider p
	// (stdcel serves the kind a graph defines once the graph is applied); stop
	// drains and ends it. It is nil where serving at run time is not offered.
	Serve func(ctx context.Context, p Provider, s Served) (stop func(), err error)
	// Done is closed when stdworker stops serving this kind (a drain, or
	// stop); work a provider starts in the background ends with it.
	Done <-chan struct{}
}

// Provider serves kinds.
type Provider interface {
	// Name is the provider's name in the stdworker configuration ("stdio",
	// "stdshell", "stdterraform", "stdcel", "stdstarlark").
	Name() string
	// Register adds handlers for s's reactions to w. It is called before
	// w.Run; an error names the kind, version and reaction it cannot serve
	// and keeps stdworker from starting that kind.
	Register(ctx context.Context, w *converge.Worker, s Served, env Env) error
}
