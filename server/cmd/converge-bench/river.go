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

	"github.com/convergehq/converge/server/internal/devpg"
)

// riverVersion is the River CLI the Go module proxy serves. It is built
// in a scratch module, never added to this repository's go.mod.
const riverVersion = "v0.26.0"

type riverResult struct {
	rate float64 // jobs/s, burn-down
	raw  string  // River's summary line
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
// same cluster.
func runRiver(ctx context.Context, bin string, cluster *devpg.Cluster, db string, jobs int, keep bool) (riverResult, error) {
	if err := freshDatabase(ctx, cluster, db, keep); err != nil {
		return riverResult{}, err
	}
	url := cluster.URL(db)
	if out, err := exec.CommandContext(ctx, bin, "migrate-up", "--database-url", url).CombinedOutput(); err != nil {
		return riverResult{}, fmt.Errorf("river migrate-up: %w\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, bin, "bench", "--database-url", url, "--num-total-jobs", strconv.Itoa(jobs)).CombinedOutput()
	if err != nil {
		return riverResult{}, fmt.Errorf("river bench: %w\n%s", err, tailOf(out))
	}
	m := riverRate.FindAllSubmatch(out, -1)
	if len(m) == 0 {
		return riverResult{}, fmt.Errorf("river bench printed no overall rate:\n%s", tailOf(out))
	}
	last := m[len(m)-1]
	rate, _ := strconv.ParseFloat(string(last[1]), 64)
	return riverResult{rate: rate, raw: strings.TrimSpace(string(last[0]))}, nil
}

func tailOf(b []byte) string {
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}
