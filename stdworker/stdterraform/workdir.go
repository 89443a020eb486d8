package stdterraform

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
)

// layout is where one resource's files live, under the provider's state
// directory:
//
//	<root>/<namespace>/<kind>/<name>/module/   the module, fetched afresh by every run
//	<root>/<namespace>/<kind>/<name>/state/    the local backend's state and workspaces
//	<root>/<namespace>/<kind>/<name>/vars.json the variables of the current run
type layout struct {
	dir string
}

// resourceLayout returns the layout of resource (namespace, kind, name)
// under root; names that are not plain path segments are refused, so that
// no resource can reach outside its own directory.
func resourceLayout(root, namespace, kind, name string) (layout, error) {
	for _, part := range [...]struct{ field, v string }{{"namespace", namespace}, {"kind", kind}, {"name", name}} {
		if part.v == "" || part.v == "." || part.v == ".." || !filepath.IsLocal(part.v) || strings.ContainsAny(part.v, `/\`) {
			return layout{}, fmt.Errorf("resource %s %q cannot name a directory", part.field, part.v)
		}
	}
	return layout{dir: filepath.Join(root, namespace, kind, name)}, nil
}

func (l layout) module() string    { return filepath.Join(l.dir, "module") }
func (l layout) state() string     { return filepath.Join(l.dir, "state") }
func (l layout) stateFile() string { return filepath.Join(l.state(), "terraform.tfstate") }
func (l layout) vars() string      { return filepath.Join(l.dir, "vars.json") }

// stateFileOf is the local backend's state file of workspace ws.
func (l layout) stateFileOf(ws string) string {
	if ws == "default" {
		return l.stateFile()
	}
	return filepath.Join(l.state(), "workspaces", ws, "terraform.tfstate")
}

// pgSchema is the PostgreSQL schema holding a resource's state in the pg
// backend: the prefix and the resource's names, lower-cased with anything
// but letters and digits made '_', and cut to PostgreSQL's 63 bytes with a
// hash of the full identity so that two resources never share one.
func pgSchema(prefix, namespace, kind, name string) string {
	identity := namespace + "/" + kind + "/" + name
	var b strings.Builder
	b.WriteString(prefix)
	for _, r := range strings.ToLower(namespace + "_" + kind + "_" + name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	sum := sha256.Sum256([]byte(identity))
	suffix := "_" + hex.EncodeToString(sum[:])[:12]
	if len(s)+len(suffix) > 63 {
		s = s[:63-len(suffix)]
	}
	return s + suffix
}

// locks serialises runs per resource: terraform holds a resource's working
// directory and state for the whole of a run.
type locks struct {
	mu    sync.Mutex
	held  map[string]chan struct{}
	users map[string]int
}

// lock waits until no other run holds key, or ctx ends; the returned
// function releases it.
func (l *locks) lock(ctx context.Context, key string) (func(), error) {
	l.mu.Lock()
	if l.held == nil {
		l.held, l.users = map[string]chan struct{}{}, map[string]int{}
	}
	ch, ok := l.held[key]
	if !ok {
		ch = make(chan struct{}, 1)
		l.held[key] = ch
	}
	l.users[key]++
	l.mu.Unlock()

	done := func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.users[key]--; l.users[key] == 0 {
			delete(l.users, key)
			delete(l.held, key)
		}
	}
	select {
	case ch <- struct{}{}:
		return func() { <-ch; done() }, nil
	case <-ctx.Done():
		done()
		return nil, fmt.Errorf("waiting for another terraform run of %s: %w", key, ctx.Err())
	}
}
