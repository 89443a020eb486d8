package stdterraform

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/convergehq/converge/sdk-go/converge"
	"github.com/convergehq/converge/stdworker/provider"
)

// Name is the provider's name in stdworker's configuration.
const Name = "stdterraform"

// cliConfigName is the terraform CLI configuration file the provider writes
// into its directory: it disables the update check and keeps one plugin
// cache for every resource, so a provider is downloaded once. A
// TF_CLI_CONFIG_FILE in config.env replaces it.
const cliConfigName = "terraformrc"

// pluginCacheDir is the plugin cache's directory under the provider's.
const pluginCacheDir = "plugin-cache"

// New returns the stdterraform provider.
func New() provider.Provider { return tfProvider{} }

type tfProvider struct{}

// Name implements provider.Provider.
func (tfProvider) Name() string { return Name }

// Register implements provider.Provider: a specChange or resync reaction
// applies the module (or a generated kind's resource), a deleteRequested
// reaction destroys it. Settings are checked here, so a broken
// configuration file keeps the kind from starting.
func (tfProvider) Register(_ context.Context, w *converge.Worker, s provider.Served, env provider.Env) error {
	hs, err := Handlers(s, env)
	if err != nil {
		return err
	}
	m := s.Manifest
	for _, r := range m.GetReactions() {
		w.Handle(m.GetKind(), int(m.GetKindVersion()), r.GetName(), hs[r.GetName()])
	}
	return nil
}

// Handlers returns the handler of each of s's reactions, by reaction name,
// as Register registers them (stdworker-bench calls them directly).
func Handlers(s provider.Served, env provider.Env) (map[string]converge.HandlerFunc, error) {
	m := s.Manifest
	kind, version := m.GetKind(), int(m.GetKindVersion())
	settings, err := parseConfig(s.Settings, "settings")
	if err != nil {
		return nil, fmt.Errorf("%s %s@%d: %w", Name, kind, version, err)
	}
	base, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("%s %s@%d: the working directory: %w", Name, kind, version, err)
	}
	root := filepath.Join(env.StateDir, Name)
	if err := writeCLIConfig(root); err != nil {
		return nil, fmt.Errorf("%s %s@%d: %w", Name, kind, version, err)
	}
	log := env.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &handler{root: root, baseDir: base, settings: settings, log: log.With("provider", Name, "kind", kind, "version", version), locks: &locks{}, inits: make(chan struct{}, 1)}
	if h.binding, err = BindingOf(m); err != nil {
		return nil, fmt.Errorf("%s %s@%d: %w", Name, kind, version, err)
	}
	if h.binding == nil && len(settings.Provider) > 0 {
		return nil, fmt.Errorf("%s %s@%d: settings.provider: only a generated kind (spec_schema.%s) takes a provider block; a module configures its own providers", Name, kind, version, BindingKeyword)
	}
	if h.binding != nil {
		h.statusFields = map[string]bool{}
		for name := range m.GetStatusSchema().GetFields()["properties"].GetStructValue().GetFields() {
			if name != MetaField {
				h.statusFields[name] = true
			}
		}
	}

	out := map[string]converge.HandlerFunc{}
	for _, r := range m.GetReactions() {
		switch r.GetTrigger() {
		case "specChange", "resync":
			if slices.Contains(r.GetEmits(), "children") {
				return nil, fmt.Errorf("%s %s@%d: reaction %q emits children: a terraform module is a leaf, not a composer", Name, kind, version, r.GetName())
			}
			if !slices.Contains(r.GetEmits(), "status") {
				return nil, fmt.Errorf("%s %s@%d: reaction %q must emit status: the outputs are reported there", Name, kind, version, r.GetName())
			}
			out[r.GetName()] = h.apply
			if h.binding != nil {
				out[r.GetName()] = h.genApply(r.GetTrigger() == "resync")
			}
		case "deleteRequested":
			out[r.GetName()] = h.destroy
			if h.binding != nil {
				out[r.GetName()] = h.genDestroy
			}
		case "observe":
			if h.binding == nil {
				return nil, fmt.Errorf("%s %s@%d: reaction %q: observe is served for generated kinds (x-terraform) only, not for modules", Name, kind, version, r.GetName())
			}
			out[r.GetName()] = h.genObserve
		default:
			return nil, fmt.Errorf("%s %s@%d: reaction %q: trigger %s is not served (stdterraform serves specChange, resync and deleteRequested, and observe for generated kinds)", Name, kind, version, r.GetName(), r.GetTrigger())
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s %s@%d: the kind has no specChange reaction to serve", Name, kind, version)
	}
	if _, err := lookPath(settings.binary()); err != nil {
		h.log.Warn("terraform binary not found; resources will fail until config.binary names one", "binary", settings.binary(), "err", err)
	}
	return out, nil
}

// writeCLIConfig writes the provider's terraform CLI configuration.
func writeCLIConfig(root string) error {
	cache := filepath.Join(root, pluginCacheDir)
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", cache, err)
	}
	content := fmt.Sprintf("disable_checkpoint = true\nplugin_cache_dir = %q\n", cache)
	if err := os.WriteFile(filepath.Join(root, cliConfigName), []byte(content), 0o644); err != nil {
		return fmt.Errorf("writing the terraform CLI configuration: %w", err)
	}
	return nil
}
