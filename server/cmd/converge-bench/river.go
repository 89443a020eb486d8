package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/convergehq/converge/server/internal/devpg"
)

// riverVersion is the River CLI the Go module proxy serves. It is built
// in a scratch module, never added to this repository's go.mod.
const riverVersion = "v0.26.0"

type riverResult struct {
	rate float64 // jobs/s, burn-down
	// continuous is River's rate in continuous mode (`river bench
	// --duration`), which inserts while it works as W1 does; 0 when
	// -river-duration is 0.
	continuous float64
}

// buildRiver builds River's CLI (which holds `river bench`) from the Go
// module proxy into dir.
func buildRiver(ctx context.Context, dir string) (string, error) {
	mod := filepath.Join(dir, "riverbuild")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "river")
	steps := [][]string{
		{"go", "mod", "init", "example.com/riverbaseline"},
		{"go", "get", "github.com/riverqueue/river/cmd/river@" + riverVersion},
		{"go", "build", "-o", bin, "github.com/riverqueue/river/cmd/river"},
	}
	for _, s := range steps {
		cmd := exec.CommandContext(ctx, s[0], s[1:]...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("%s: %w\n%s", strings.Join(s, " "), err, out)
		}
	}
	return bin, nil
}

var riverRate = regexp.MustCompile(`overall job/sec \[\s*([0-9.]+)\s*\]`)

// runRiver runs River's burn-down benchmark on a fresh database of the
// same cluster: River inserts every job first, then starts its clock.
func runRiver(ctx context.Context, bin string, cluster *devpg.Cluster, db string, jobs int, keep bool) (riverResult, error) {
	rate, err := riverBench(ctx, bin, cluster, db, keep, "--num-total-jobs", strconv.Itoa(jobs))
	return riverResult{rate: rate}, err
}

// runRiverContinuous runs River's benchmark for d in continuous mode on a
// fresh database of the same cluster: it inserts jobs while it works them,
// the shape of W1, and reports the jobs worked per second.
func runRiverContinuous(ctx context.Context, bin string, cluster *devpg.Cluster, db string, d time.Duration, keep bool) (float64, error) {
	return riverBench(ctx, bin, cluster, db, keep, "--duration", d.String())
}

// riverBench migrates a fresh database db up to River's schema, runs
// `river bench` with args on it and returns the overall job/sec of its
// final summary line.
func riverBench(ctx context.Context, bin string, cluster *devpg.Cluster, db string, keep bool, args ...string) (float64, error) {
	if err := freshDatabase(ctx, cluster, db, keep); err != nil {
		return 0, err
	}
	url := cluster.URL(db)
	if out, err := exec.CommandContext(ctx, bin, "migrate-up", "--database-url", url).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("river migrate-up: %w\n%s", err, out)
	}
	cmd := append([]string{"bench", "--database-url", url}, args...)
	out, err := exec.CommandContext(ctx, bin, cmd...).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("river bench %s: %w\n%s", strings.Join(args, " "), err, tailOf(out))
	}
	m := riverRate.FindAllSubmatch(out, -1)
	if len(m) == 0 {
		return 0, fmt.Errorf("river bench %s printed no overall rate:\n%s", strings.Join(args, " "), tailOf(out))
	}
	last := m[len(m)-1]
	rate, err := strconv.ParseFloat(string(last[1]), 64)
	if err != nil {
		return 0, fmt.Errorf("river bench %s: overall job/sec %q: %w", strings.Join(args, " "), last[1], err)
	}
	return rate, nil
}

func tailOf(b []byte) string {
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}
