package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/convergehq/converge/server/internal/devpg"
)

// The -report file: the whole run as Markdown, meant for
// docs/bench-report.md, which docs/benchmarks.md includes. It starts with
// what the figures depend on (machine, PostgreSQL, Go, commit), then
// holds every table the run printed and the targets with their verdicts.

// runInfo is what a report records about the run besides its figures.
type runInfo struct {
	started   time.Time
	pgVersion string
	commit    string
	command   string
}

func collectRunInfo(ctx context.Context, cluster *devpg.Cluster) runInfo {
	info := runInfo{started: time.Now().UTC(), commit: gitCommit(ctx), command: strings.Join(os.Args, " ")}
	info.pgVersion = "unknown"
	if conn, err := pgx.Connect(ctx, cluster.URL("postgres")); err == nil {
		_ = conn.QueryRow(ctx, `SELECT version()`).Scan(&info.pgVersion)
		conn.Close(ctx)
	}
	return info
}

// gitCommit is HEAD, marked when the tree has uncommitted changes.
func gitCommit(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown (not a git checkout)"
	}
	commit := strings.TrimSpace(string(out))
	if st, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		commit += " with uncommitted changes"
	}
	return commit
}

// kernelRelease is the running Linux kernel, from /proc.
func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return runtime.GOOS
	}
	return runtime.GOOS + " " + strings.TrimSpace(string(b))
}

// writeReport writes the run's header, body (the tables as printed) and
// targets to path.
func writeReport(path string, o options, settings map[string]string, info runInfo, body []byte, ts []target) error {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("<!-- Written by converge-bench -report; do not edit by hand. -->")
	p("## The full protocol, run of %s", info.started.Format("2006-01-02 15:04 UTC"))
	p("")
	p("- Machine: %s; kernel %s", machine(), kernelRelease())
	p("- PostgreSQL: %s", info.pgVersion)
	p("- Profile: %s; %s", profileName(o.durable), settingList(settings))
	p("- Go: %s", runtime.Version())
	p("- Commit: %s", info.commit)
	p("- Command: `%s`", info.command)
	p("- Finished: %s (%s)", time.Now().UTC().Format("2006-01-02 15:04 UTC"), time.Since(info.started).Round(time.Second))
	p("")
	b.Write(body)
	reportTargets(&b, ts, o.durable)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("-report %s: %w", path, err)
	}
	return nil
}
