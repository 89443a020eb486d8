package stdterraform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/convergehq/converge/sdk-go/converge"
)

// config is what settings and provider configs say; see the package doc.
type config struct {
	Binary  string            `json:"binary,omitempty"`
	Backend *backend          `json:"backend,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// Provider is a generated kind's provider configuration block
	// (credentials, region, …); the kind's config_schema describes it.
	Provider json.RawMessage `json:"provider,omitempty"`
}

// backend says where state lives.
type backend struct {
	// Type is "local" (a directory under the provider's state directory) or
	// "pg" (a PostgreSQL database).
	Type string `json:"type"`
	// ConnStr is the pg backend's connection string; empty means terraform
	// reads PG_CONN_STR from its environment.
	ConnStr string `json:"conn_str,omitempty"`
	// SchemaPrefix starts the name of each resource's schema in the pg
	// backend; default defaultSchemaPrefix.
	SchemaPrefix string `json:"schema_prefix,omitempty"`
}

const (
	backendLocal        = "local"
	backendPG           = "pg"
	defaultBinary       = "terraform"
	defaultSchemaPrefix = "tf_"
	maxSchemaPrefixLen  = 20
)

// parseConfig decodes one layer of configuration (settings or a provider
// config) found at field; errors name the field.
func parseConfig(raw json.RawMessage, field string) (config, error) {
	var c config
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return c, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("%s: %w", field, err)
	}
	return c, c.check(field)
}

// check reports the first field that cannot work.
func (c config) check(field string) error {
	if strings.ContainsAny(c.Binary, "\x00\n") {
		return fmt.Errorf("%s.binary: %q is not a file name", field, c.Binary)
	}
	if b := c.Backend; b != nil {
		switch b.Type {
		case backendLocal:
			if b.ConnStr != "" || b.SchemaPrefix != "" {
				return fmt.Errorf("%s.backend: conn_str and schema_prefix belong to type pg, not local", field)
			}
		case backendPG:
			if len(b.SchemaPrefix) > maxSchemaPrefixLen || strings.Trim(b.SchemaPrefix, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
				return fmt.Errorf("%s.backend.schema_prefix: %q must be at most %d lower-case letters, digits or '_'", field, b.SchemaPrefix, maxSchemaPrefixLen)
			}
		default:
			return fmt.Errorf("%s.backend.type: %q must be %q or %q", field, b.Type, backendLocal, backendPG)
		}
	}
	if p := bytes.TrimSpace(c.Provider); len(p) > 0 && p[0] != '{' && !bytes.Equal(p, []byte("null")) {
		return fmt.Errorf("%s.provider: must be an object of the provider's arguments", field)
	}
	keys := make([]string, 0, len(c.Env))
	for k := range c.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("%s.env: %q is not an environment variable name", field, k)
		}
		if strings.ContainsRune(c.Env[k], 0) {
			return fmt.Errorf("%s.env.%s: holds a NUL byte", field, k)
		}
	}
	if bad := tfexec.ProhibitedEnv(maps.Clone(c.Env)); len(bad) > 0 {
		slices.Sort(bad)
		return fmt.Errorf("%s.env.%s: set by the provider itself (variables go in spec.variables)", field, bad[0])
	}
	return nil
}

// over returns c with o on top: o's binary and backend replace c's when set,
// and o's env adds to c's, key by key.
func (c config) over(o config) config {
	out := c
	if o.Binary != "" {
		out.Binary = o.Binary
	}
	if o.Backend != nil {
		out.Backend = o.Backend
	}
	if len(o.Provider) > 0 {
		out.Provider = o.Provider
	}
	if len(o.Env) > 0 {
		env := maps.Clone(c.Env)
		if env == nil {
			env = make(map[string]string, len(o.Env))
		}
		maps.Copy(env, o.Env)
		out.Env = env
	}
	return out
}

// binary is the terraform or tofu executable to run, a name or a path.
func (c config) binary() string {
	if c.Binary == "" {
		return defaultBinary
	}
	return c.Binary
}

// backendType is the state backend in use.
func (c config) backendType() string {
	if c.Backend == nil {
		return backendLocal
	}
	return c.Backend.Type
}

// schema is the pg backend's schema for t's resource.
func (c config) schema(t *converge.Task) string {
	prefix := defaultSchemaPrefix
	if c.Backend != nil && c.Backend.SchemaPrefix != "" {
		prefix = c.Backend.SchemaPrefix
	}
	return pgSchema(prefix, t.Namespace, t.Kind, t.Name)
}
