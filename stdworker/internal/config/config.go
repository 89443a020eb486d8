// Package config reads stdworker's configuration file: which kind versions to
// serve, with which provider, how many tasks at once and the provider's
// settings for each.
//
//	kinds:
//	  - kind: backup
//	    version: 1
//	    provider: stdio
//	    parallelism: 4
//	    settings: {command: ["./backup.sh"], timeout_seconds: 60}
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxParallelism bounds a kind's parallelism, as the SDK bounds a worker's
// capacity.
const MaxParallelism = 10000

// MaxFileSize bounds the configuration file.
const MaxFileSize = 4 << 20

// File is a parsed configuration file.
type File struct {
	// Path is the file's path; Dir its directory, against which providers
	// resolve relative paths in settings.
	Path, Dir string
	// Kinds are the kind versions to serve, in the file's order.
	Kinds []Kind
}

// Kind is one kind version to serve.
type Kind struct {
	Kind    string
	Version int
	// Provider names the provider that serves it ("stdio", "stdshell", …).
	Provider string
	// Parallelism is how many of its tasks run at once; 0 means the
	// default (the --parallelism flag).
	Parallelism int
	// Settings are the provider's settings, as a JSON object; nil when the
	// file gives none.
	Settings json.RawMessage
}

// Ref returns "kind@version".
func (k Kind) Ref() string { return Ref(k.Kind, k.Version) }

// Ref formats a kind version as "kind@version", the form --kinds takes.
func Ref(kind string, version int) string { return kind + "@" + strconv.Itoa(version) }

// kindName is the manifest's rule for kind names.
var kindName = regexp.MustCompile(`^[a-z][a-z0-9]*([.-][a-z0-9]+)*$`)

// rawFile and rawKind mirror the YAML; unknown keys are refused.
type rawFile struct {
	Kinds []rawKind `yaml:"kinds"`
}

type rawKind struct {
	Kind        string    `yaml:"kind"`
	Version     int       `yaml:"version"`
	Provider    string    `yaml:"provider"`
	Parallelism int       `yaml:"parallelism"`
	Settings    yaml.Node `yaml:"settings"`
}

// Load reads and checks the file at path. providers are the provider names
// stdworker knows. Every problem is reported, one per line, naming the
// entry and field.
func Load(path string, providers []string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if len(raw) > MaxFileSize {
		return nil, fmt.Errorf("config %s: larger than %d MiB", path, MaxFileSize>>20)
	}
	file, err := Parse(raw, providers)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	file.Path, file.Dir = abs, filepath.Dir(abs)
	return file, nil
}

// Parse parses and checks a configuration file's contents; see Load.
func Parse(raw []byte, providers []string) (*File, error) {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var rf rawFile
	if err := dec.Decode(&rf); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("yaml: %w", err)
	}
	var problems []string
	file := &File{}
	seen := map[string]int{}
	for i, rk := range rf.Kinds {
		where := fmt.Sprintf("kinds[%d]", i)
		k := Kind{Kind: rk.Kind, Version: rk.Version, Provider: rk.Provider, Parallelism: rk.Parallelism}
		if !kindName.MatchString(k.Kind) || len(k.Kind) > 63 {
			problems = append(problems, fmt.Sprintf("%s.kind: %q is not a kind name (lower-case words separated by '.' or '-', at most 63 characters)", where, k.Kind))
		}
		if k.Version < 1 || k.Version > 32767 {
			problems = append(problems, fmt.Sprintf("%s.version: %d is not a kind version (1 to 32767)", where, k.Version))
		}
		if !known(providers, k.Provider) {
			problems = append(problems, fmt.Sprintf("%s.provider: %q is not a provider; known: %s", where, k.Provider, strings.Join(providers, ", ")))
		}
		if k.Parallelism < 0 || k.Parallelism > MaxParallelism {
			problems = append(problems, fmt.Sprintf("%s.parallelism: %d is out of range (0 for the default, up to %d)", where, k.Parallelism, MaxParallelism))
		}
		if first, dup := seen[k.Ref()]; dup {
			problems = append(problems, fmt.Sprintf("%s: %s is already served by kinds[%d]", where, k.Ref(), first))
		} else {
			seen[k.Ref()] = i
		}
		settings, err := settingsJSON(&rk.Settings)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s.settings: %v", where, err))
		}
		k.Settings = settings
		file.Kinds = append(file.Kinds, k)
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	return file, nil
}

// settingsJSON converts a settings node to a JSON object; nil when absent.
func settingsJSON(n *yaml.Node) (json.RawMessage, error) {
	if n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("must be a mapping, line %d", n.Line)
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("not representable as JSON: %w", err)
	}
	return raw, nil
}

func known(providers []string, name string) bool {
	for _, p := range providers {
		if p == name {
			return true
		}
	}
	return false
}

// ParseKinds parses the --kinds flag: "kind@version,…". An empty string
// means no restriction (nil).
func ParseKinds(s string) (map[string]bool, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		kind, ver, ok := strings.Cut(item, "@")
		v, err := strconv.Atoi(ver)
		if !ok || err != nil || v < 1 || v > 32767 || !kindName.MatchString(kind) {
			return nil, fmt.Errorf("--kinds: %q is not kind@version (e.g. std.shell@1)", item)
		}
		out[Ref(kind, v)] = true
	}
	return out, nil
}
