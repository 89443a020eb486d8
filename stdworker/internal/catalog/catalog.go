// Package catalog reads kind manifests from YAML files (the catalog/std
// files embedded in stdworker) and applies them to a server.
package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"

	"connectrpc.com/connect"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// Manifest is one kind manifest and the file it came from.
type Manifest struct {
	File     string
	Manifest *convergev1.KindManifest
}

// Read parses every "<dir>/v<N>.yaml" in fsys, in path order. A file may
// hold several YAML documents; each must be a manifest ("type: manifest",
// or no type).
func Read(fsys fs.FS) ([]Manifest, error) {
	files, err := fs.Glob(fsys, "*/v*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []Manifest
	for _, f := range files {
		raw, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		ms, err := Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, m := range ms {
			out = append(out, Manifest{File: path.Clean(f), Manifest: m})
		}
	}
	return out, nil
}

// Parse parses the manifests in a YAML stream.
func Parse(raw []byte) ([]*convergev1.KindManifest, error) {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	var out []*convergev1.KindManifest
	for i := 0; ; i++ {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if doc == nil {
			continue
		}
		if t, ok := doc["type"]; ok {
			if t != "manifest" {
				return nil, fmt.Errorf("document %d: type %v: only manifests belong here", i, t)
			}
			delete(doc, "type")
		}
		js, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		m := &convergev1.KindManifest{}
		if err := protojson.Unmarshal(js, m); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		out = append(out, m)
	}
}

// Applied is the outcome of applying one manifest.
type Applied struct {
	Manifest
	// Result is "created", "configured" or "unchanged".
	Result string
}

// Apply applies each manifest in order and stops at the first the server
// refuses, returning what it applied before it.
func Apply(ctx context.Context, c *client.Client, ms []Manifest) ([]Applied, error) {
	var done []Applied
	for _, m := range ms {
		resp, err := c.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: m.Manifest})
		if err != nil {
			msg := err.Error()
			var ce *connect.Error
			if errors.As(err, &ce) {
				msg = ce.Message()
			}
			return done, fmt.Errorf("%s (kind %s/v%d): %s", m.File, m.Manifest.GetKind(), m.Manifest.GetKindVersion(), msg)
		}
		done = append(done, Applied{Manifest: m, Result: resp.GetResult()})
	}
	return done, nil
}
