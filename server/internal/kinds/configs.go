package kinds

import (
	"context"

	"github.com/convergehq/converge/server/internal/store"
)

// DefaultConfigName is the provider config every resource of a kind
// version gets, under any named one it references.
const DefaultConfigName = "default"

// providerConfigs holds one kind version's provider configs by name.
type providerConfigs map[string]store.ProviderConfig

func (r *Registry) loadConfigs(ctx context.Context) (map[key]providerConfigs, error) {
	rows, err := r.store.ListProviderConfigs(ctx, "", 0)
	if err != nil {
		return nil, err
	}
	out := map[key]providerConfigs{}
	for _, c := range rows {
		k := key{c.Kind, c.Version}
		if out[k] == nil {
			out[k] = providerConfigs{}
		}
		out[k][c.Name] = c
	}
	return out, nil
}

// DefaultConfig returns a kind version's default provider config and its
// revision (nil and 0 when it has none).
func (r *Registry) DefaultConfig(kind string, version int32) ([]byte, int64) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, ok := r.configs[key{kind, version}][DefaultConfigName]
	if !ok {
		return nil, 0
	}
	return c.Config, c.Revision
}

// HasConfig reports whether the view holds the named provider config of a
// kind version.
func (r *Registry) HasConfig(kind string, version int32, name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.configs[key{kind, version}][name]
	return ok
}

// EffectiveConfig returns the config a task on a resource gets: the
// default with the named config's keys on top (name "" or "default": the
// default alone). It is nil when there is neither.
func (r *Registry) EffectiveConfig(kind string, version int32, name string) []byte {
	r.mu.RLock()
	configs := r.configs[key{kind, version}]
	r.mu.RUnlock()
	def := configs[DefaultConfigName].Config
	if name == "" || name == DefaultConfigName {
		return def
	}
	named, ok := configs[name]
	if !ok {
		return def
	}
	merged, err := store.MergeConfig(def, named.Config)
	if err != nil {
		r.log.Error("a stored provider config is not a JSON object", "kind", kind, "version", version, "name", name, "err", err)
		return def
	}
	return merged
}
