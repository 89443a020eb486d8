package stdterraform

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// genSpec is a generated kind's spec: the resource's arguments, and the
// import ID when the resource adopts an existing object.
type genSpec struct {
	args     map[string]any
	importID string
}

// parseGenSpec splits a generated kind's spec. The server has checked it
// against spec_schema; this only takes the reserved field out.
func parseGenSpec(raw json.RawMessage) (genSpec, error) {
	var s genSpec
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers reach terraform as written
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := dec.Decode(&s.args); err != nil {
			return s, fmt.Errorf("spec: %w", err)
		}
	}
	if s.args == nil {
		s.args = map[string]any{}
	}
	for _, name := range metaArguments {
		if _, ok := s.args[name]; ok {
			// A generated spec_schema never has these; a hand-made
			// manifest with an open schema could, and "provisioner"
			// would run a command on the worker.
			return s, fmt.Errorf("spec.%s: a Terraform meta-argument, not an argument of the resource type", name)
		}
	}
	if v, ok := s.args[ImportIDField]; ok {
		id, isString := v.(string)
		if !isString || id == "" {
			return s, fmt.Errorf("spec.%s: must be a non-empty string", ImportIDField)
		}
		s.importID = id
		delete(s.args, ImportIDField)
	}
	return s, nil
}

// metaArguments are the names Terraform reads in a resource block itself,
// never as the resource type's arguments.
var metaArguments = []string{"connection", "count", "depends_on", "for_each", "lifecycle", "provider", "provisioner"}

// mainConfig is the whole configuration of a generated kind's resource,
// in Terraform's JSON syntax (main.tf.json): the provider required at the
// binding's version and configured with config.provider, and the one
// resource with the spec's arguments; importing it when importID is set.
func mainConfig(b *Binding, providerCfg json.RawMessage, s genSpec, withImport bool) ([]byte, error) {
	local := b.LocalName()
	prov := map[string]any{}
	if len(bytes.TrimSpace(providerCfg)) > 0 && !bytes.Equal(bytes.TrimSpace(providerCfg), []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(providerCfg))
		dec.UseNumber()
		if err := dec.Decode(&prov); err != nil {
			return nil, fmt.Errorf("config.provider: must be an object of the provider's arguments: %w", err)
		}
	}
	cfg := map[string]any{
		"terraform": map[string]any{"required_providers": map[string]any{
			local: map[string]any{"source": QualifiedSource(b.Source), "version": b.Version},
		}},
		"provider": map[string]any{local: literal(prov)},
		"resource": map[string]any{b.Type: map[string]any{"this": literal(s.args)}},
	}
	if withImport && s.importID != "" {
		cfg["import"] = []any{map[string]any{"to": b.Address(), "id": literal(s.importID)}}
	}
	// Indented, so that terraform's diagnostics point at one argument a
	// line.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(cfg); err != nil {
		return nil, errors.New("spec: cannot be written as terraform configuration: " + err.Error())
	}
	return buf.Bytes(), nil
}

// literal makes a JSON value mean itself to terraform. Strings in
// Terraform's JSON syntax are templates, object keys too: a spec value
// "${file("/etc/passwd")}" would be evaluated on the worker. Doubling the
// "$" of "${" and the "%" of "%{" is the syntax's escape.
func literal(v any) any {
	switch x := v.(type) {
	case string:
		return escapeTemplate(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[escapeTemplate(k)] = literal(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = literal(e)
		}
		return out
	}
	return v
}

var templateEscaper = strings.NewReplacer("${", "$${", "%{", "%%{")

func escapeTemplate(s string) string { return templateEscaper.Replace(s) }
