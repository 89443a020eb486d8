//go:build unix

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// workerRecord is one line of the specworker's -record file: a compose,
// childrenSettled or teardown it ran, and when.
type workerRecord struct {
	Event      string        `json:"event"`
	Kind       string        `json:"kind"`
	Name       string        `json:"name"`
	Generation int64         `json:"generation"`
	Start      time.Time     `json:"start"`
	End        time.Time     `json:"end"`
	Error      string        `json:"error"`
	Rollup     *recordRollup `json:"rollup"`
}

type recordRollup struct {
	Total       int `json:"total"`
	Ready       int `json:"ready"`
	Reconciling int `json:"reconciling"`
	Degraded    int `json:"degraded"`
	Failed      int `json:"failed"`
}

func (r workerRecord) String() string {
	s := fmt.Sprintf("%s %s/%s gen %d %s..%s", r.Event, r.Kind, r.Name, r.Generation,
		r.Start.Format("15:04:05.000000"), r.End.Format("15:04:05.000000"))
	if r.Error != "" {
		s += fmt.Sprintf(" error %q", r.Error)
	}
	if r.Rollup != nil {
		s += fmt.Sprintf(" rollup %+v", *r.Rollup)
	}
	return s
}

// recordFile returns a path for a specworker's -record file.
func recordFile(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "records.jsonl")
}

// readRecords reads a -record file; a file not yet created holds none.
func readRecords(t *testing.T, path string) []workerRecord {
	t.Helper()
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading the worker's records: %v", err)
	}
	var out []workerRecord
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		var r workerRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("the worker's records: line %d: %v: %s", len(out)+1, err, sc.Bytes())
		}
		out = append(out, r)
	}
	return out
}

// recordsOf keeps the records of one event for one resource.
func recordsOf(all []workerRecord, event, kind, name string) []workerRecord {
	var out []workerRecord
	for _, r := range all {
		if r.Event == event && r.Kind == kind && r.Name == name {
			out = append(out, r)
		}
	}
	return out
}

func renderRecords(all []workerRecord) string {
	if len(all) == 0 {
		return "none"
	}
	parts := make([]string, len(all))
	for i, r := range all {
		parts[i] = r.String()
	}
	return strings.Join(parts, "; ")
}

// countRows runs a count query on the test's database.
func countRows(t *testing.T, pool *pgxpool.Pool, query string, args ...any) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	var n int
	if err := pool.QueryRow(ctx, query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// childCount counts a composite's children, read in one snapshot: a
// composition is applied in one transaction, so it sees all or none of it.
func childCount(t *testing.T, pool *pgxpool.Pool, kind, name string) int {
	t.Helper()
	return countRows(t, pool, `SELECT count(*) FROM resources c JOIN resources p ON p.id = c.owner_id
		WHERE p.namespace = 'default' AND p.kind = $1 AND p.name = $2`, kind, name)
}
