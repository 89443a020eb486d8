package devpg

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ErrNoBinaries is returned, wrapped in a message saying where Start
// looked and what to install, when no PostgreSQL server binaries are found.
var ErrNoBinaries = errors.New("PostgreSQL server binaries (initdb, postgres) not found")

// binEnv names the environment variable that pins the binaries' directory.
const binEnv = "CONVERGE_PG_BIN"

// wellKnownDirs are the install locations searched after PATH, in order.
// Each pattern's matches are tried newest version first. Tests replace it.
var wellKnownDirs = []string{
	"/usr/lib/postgresql/*/bin",
	"/usr/local/pgsql/bin",
	"/opt/homebrew/opt/postgresql*/bin",
	"/usr/local/opt/postgresql*/bin",
}

// findBinaries returns the directory holding initdb and postgres.
//
// CONVERGE_PG_BIN, when set, is the only place looked at: a user who names
// a directory wants that server version, not a silent substitute.
func findBinaries() (string, error) {
	if dir := os.Getenv(binEnv); dir != "" {
		if hasBinaries(dir) {
			return dir, nil
		}
		return "", notFound([]string{binEnv + "=" + dir})
	}
	searched := []string{"PATH"}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir != "" && hasBinaries(dir) {
			return dir, nil
		}
	}
	for _, pattern := range wellKnownDirs {
		searched = append(searched, pattern)
		for _, dir := range newestFirst(pattern) {
			if hasBinaries(dir) {
				return dir, nil
			}
		}
	}
	return "", notFound(searched)
}

func notFound(searched []string) error {
	return fmt.Errorf("%w; searched: %s; install them (Debian/Ubuntu: apt-get install postgresql; "+
		"Fedora: dnf install postgresql-server; macOS: brew install postgresql@16), set %s to their "+
		"directory, or point Converge at an existing database with --database-url",
		ErrNoBinaries, strings.Join(searched, ", "), binEnv)
}

func hasBinaries(dir string) bool {
	return isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres"))
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// newestFirst expands pattern and orders the matches by the version
// numbers in their paths, highest first, so 16 beats 9.6.
func newestFirst(pattern string) []string {
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return nil
	}
	slices.SortStableFunc(matches, func(a, b string) int {
		return slices.Compare(versionOf(b), versionOf(a))
	})
	return matches
}

var digits = regexp.MustCompile(`[0-9]+`)

// versionOf extracts the numbers in a path, e.g. [9 6] from
// /usr/lib/postgresql/9.6/bin or [16] from /opt/homebrew/opt/postgresql@16/bin.
func versionOf(path string) []int {
	var v []int
	for _, d := range digits.FindAllString(path, -1) {
		n, err := strconv.Atoi(d)
		if err != nil {
			n = 0
		}
		v = append(v, n)
	}
	return v
}
