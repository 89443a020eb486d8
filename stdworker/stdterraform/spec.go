package stdterraform

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// spec is a std.terraform resource's spec.
type spec struct {
	// Source is where the root module comes from: a local directory, or
	// any module source terraform init -from-module understands (git::…,
	// https://….tar.gz, …).
	Source string `json:"source"`
	// Variables is a JSON object of the module's input variables; nil
	// when the spec gives none.
	Variables json.RawMessage `json:"variables,omitempty"`
	// Workspace is the Terraform workspace; "" means "default".
	Workspace string `json:"workspace,omitempty"`
}

// Limits on a spec, beyond what the kind's spec_schema says, so that a
// resource of another kind served by this provider is held to them too.
const maxSourceLen = 2048

// workspacePattern is what a workspace name may look like: terraform and
// tofu need a name that is also a path segment.
var workspacePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// parseSpec decodes and checks a resource spec; errors name the field.
func parseSpec(raw json.RawMessage) (spec, error) {
	var s spec
	if len(bytes.TrimSpace(raw)) == 0 {
		return s, errors.New("spec.source: required")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("spec: %w", err)
	}
	if err := checkSource(s.Source); err != nil {
		return s, err
	}
	if v := bytes.TrimSpace(s.Variables); len(v) > 0 && !bytes.Equal(v, []byte("null")) && v[0] != '{' {
		return s, errors.New("spec.variables: must be an object of variable names to values")
	}
	if s.Workspace != "" && !workspacePattern.MatchString(s.Workspace) {
		return s, fmt.Errorf("spec.workspace: %q must be 1-64 letters, digits, '_' or '-', starting with a letter or digit", s.Workspace)
	}
	return s, nil
}

// checkSource rejects module sources that cannot be right whatever the
// module: empty, over-long, or holding control characters.
func checkSource(src string) error {
	switch {
	case src == "":
		return errors.New("spec.source: required: a local directory, a git URL or an https archive URL")
	case len(src) > maxSourceLen:
		return fmt.Errorf("spec.source: longer than %d characters", maxSourceLen)
	case strings.HasPrefix(src, "-"):
		return fmt.Errorf("spec.source: %q must not start with '-'", src)
	}
	for _, r := range src {
		if unicode.IsControl(r) {
			return fmt.Errorf("spec.source: %q holds a control character", src)
		}
	}
	return nil
}

// isLocal reports whether a module source names a local directory: an
// absolute path or one starting with ./ or ../, as terraform reads them.
func isLocal(src string) bool {
	return filepath.IsAbs(src) || strings.HasPrefix(src, "./") || strings.HasPrefix(src, "../") ||
		src == "." || src == ".."
}

// workspace returns the workspace a spec selects.
func (s spec) workspace() string {
	if s.Workspace == "" {
		return "default"
	}
	return s.Workspace
}

// varsJSON returns the var-file content for the spec's variables: always a
// JSON object.
func (s spec) varsJSON() []byte {
	v := bytes.TrimSpace(s.Variables)
	if len(v) == 0 || bytes.Equal(v, []byte("null")) {
		return []byte("{}")
	}
	return v
}
