// Command converge is the Converge server: the control plane and broker
// over PostgreSQL, its migrations, and a dev mode with a throwaway
// database.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/convergehq/converge/server/internal/tracing"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// gcPercent is the garbage collector's target (GOGC) unless the
// environment sets one. The server's live heap stays small (tens of MiB
// with a million resources at rest), and on the reconcile path Go's
// default of 100 spends about a seventh of the server's CPU collecting;
// at 400 the heap peaks higher under load but the collector runs a
// quarter as often.
const gcPercent = 400

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := &cobra.Command{
		Use:           "converge",
		Short:         "Converge: a declarative control plane over PostgreSQL",
		Long:          "Converge reconciles resources of kinds defined as data. Workers in any language dial in over Connect RPC.\n\nStart with `converge dev` for a throwaway local setup.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.AddCommand(serveCmd(), devCmd(), migrateCmd(), pgBinCmd(), keygenCmd())
	// Tracing is configured by the standard OTEL_* variables and off
	// unless they ask for an exporter (docs/operations.md).
	stopTracing, err := tracing.Setup(ctx, version, slog.Default())
	if err != nil {
		fmt.Fprintln(os.Stderr, "error: tracing:", err)
		os.Exit(1)
	}
	err = root.ExecuteContext(ctx)
	flush, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = stopTracing(flush)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func newLogger(level, format string) (*slog.Logger, *slog.LevelVar, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	// A LevelVar, so an admin can change the level while the server runs
	// (SetLogLevel).
	v := new(slog.LevelVar)
	v.Set(l)
	opts := &slog.HandlerOptions{Level: v}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), v, nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), v, nil
	}
	return nil, nil, fmt.Errorf("--log-format %q: use text or json", format)
}
