package tfgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"

	std "github.com/convergehq/converge/catalog/std"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/stdworker/internal/catalog"
	"github.com/convergehq/converge/stdworker/stdterraform"
)

// Options say what to generate.
type Options struct {
	// Source and Version are the provider's ("hashicorp/time", "0.14.2").
	Source, Version string
	// Owner is the team that owns the kinds.
	Owner string
	// ForbidReplace makes every kind refuse plans that replace the object.
	ForbidReplace bool
	// ResyncSeconds is the kinds' resync interval (drift detection); 0
	// means no resync.
	ResyncSeconds int
}

// Kind is one generated kind version.
type Kind struct {
	// Type is the resource type it serves.
	Type     string
	Manifest *Manifest
}

// Skipped is a resource type that became no kind, and why.
type Skipped struct {
	Type string
	Why  string
}

// Manifest is a generated manifest in the catalog's document format; its
// field order is the file's.
type Manifest struct {
	Type         string         `yaml:"type" json:"-"`
	Kind         string         `yaml:"kind" json:"kind"`
	KindVersion  int            `yaml:"kind_version" json:"kind_version"`
	Description  string         `yaml:"description" json:"description"`
	Owner        string         `yaml:"owner" json:"owner"`
	SpecSchema   map[string]any `yaml:"spec_schema" json:"spec_schema"`
	StatusSchema map[string]any `yaml:"status_schema" json:"status_schema"`
	ConfigSchema map[string]any `yaml:"config_schema" json:"config_schema"`
	Policy       Policy         `yaml:"policy" json:"policy"`
	Finalizer    string         `yaml:"finalizer" json:"finalizer"`
	Reactions    []Reaction     `yaml:"reactions" json:"reactions"`
}

// Policy is the part of a kind policy the generator sets.
type Policy struct {
	TaskDeadlineSeconds   int `yaml:"task_deadline_seconds" json:"task_deadline_seconds"`
	MaxTransientAttempts  int `yaml:"max_transient_attempts" json:"max_transient_attempts"`
	ResyncIntervalSeconds int `yaml:"resync_interval_seconds,omitempty" json:"resync_interval_seconds,omitempty"`
}

// Reaction is one reaction of a generated kind.
type Reaction struct {
	Name        string   `yaml:"name" json:"name"`
	Trigger     string   `yaml:"trigger" json:"trigger"`
	Emits       []string `yaml:"emits,flow" json:"emits"`
	Description string   `yaml:"description" json:"description"`
}

// Proto is m as the API's KindManifest.
func (m *Manifest) Proto() (*convergev1.KindManifest, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out convergev1.KindManifest
	if err := protojson.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Generate maps every resource type of the provider opts names to a kind
// at version 1 (Write decides the version). A resource type that cannot
// be mapped is skipped, with the attribute and the reason.
func Generate(s *Schemas, opts Options) ([]Kind, []Skipped, error) {
	b := stdterraform.Binding{Source: opts.Source, Version: opts.Version, Type: "x"}
	if err := b.Check(); err != nil {
		return nil, nil, fmt.Errorf("--provider: %w", err)
	}
	if !teamPattern.MatchString(opts.Owner) {
		return nil, nil, fmt.Errorf("--owner: %q is not a team directory name ([a-z][a-z0-9-]*)", opts.Owner)
	}
	p, err := providerOf(s, opts.Source)
	if err != nil {
		return nil, nil, err
	}
	config, err := configSchema(p.Provider)
	if err != nil {
		return nil, nil, err
	}
	local := b.LocalName()
	var kinds []Kind
	var skipped []Skipped
	seen := map[string]string{}
	for _, typ := range sortedKeys(p.ResourceSchemas) {
		m, err := resourceKind(typ, local, p.ResourceSchemas[typ], config, opts)
		if err == nil {
			if other, dup := seen[m.Kind]; dup {
				err = fmt.Errorf("its kind name %s is also %s's", m.Kind, other)
			}
		}
		if err != nil {
			skipped = append(skipped, Skipped{Type: typ, Why: err.Error()})
			continue
		}
		seen[m.Kind] = typ
		kinds = append(kinds, Kind{Type: typ, Manifest: m})
	}
	return kinds, skipped, nil
}

var teamPattern = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// providerOf finds the provider in the document by its full source
// address.
func providerOf(s *Schemas, source string) (*ProviderSchema, error) {
	full := stdterraform.QualifiedSource(source)
	if p := s.ProviderSchemas[full]; p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("provider schema: has no provider %s (it has %s)", full, strings.Join(sortedKeys(s.ProviderSchemas), ", "))
}

// resourceKind maps one resource type.
func resourceKind(typ, local string, rs *Schema, config map[string]any, opts Options) (*Manifest, error) {
	if rs == nil || rs.Block == nil {
		return nil, errors.New("has no schema block")
	}
	kind, err := KindName(local, typ)
	if err != nil {
		return nil, err
	}
	spec, err := blockSchema(rs.Block, "", specSide, 0)
	if err != nil {
		return nil, fmt.Errorf("spec.%w", err)
	}
	status, err := blockSchema(rs.Block, "", statusSide, 0)
	if err != nil {
		return nil, fmt.Errorf("status.%w", err)
	}
	specProps, statusProps := spec["properties"].(map[string]any), status["properties"].(map[string]any)
	if _, clash := specProps[stdterraform.ImportIDField]; clash {
		return nil, fmt.Errorf("spec.%s: the argument's name is the one generated kinds reserve for the import ID", stdterraform.ImportIDField)
	}
	if _, clash := statusProps[stdterraform.MetaField]; clash {
		return nil, fmt.Errorf("status.%s: the attribute's name is the one generated kinds reserve for the run's report", stdterraform.MetaField)
	}
	specProps[stdterraform.ImportIDField] = map[string]any{
		"type": "string", "minLength": 1, "maxLength": 4096,
		"description": "Adopt an existing object instead of creating one: its import ID, in the form the provider documents for " + typ + ". Used while the resource's state is empty.",
	}
	binding := map[string]any{"source": opts.Source, "version": opts.Version, "type": typ}
	if opts.ForbidReplace {
		binding["replace"] = stdterraform.ReplaceForbid
	}
	spec[stdterraform.BindingKeyword] = binding
	statusProps[stdterraform.MetaField] = metaSchema
	finalizer := kind + "/destroy"
	reactions := []Reaction{
		{Name: "apply", Trigger: "specChange", Emits: []string{"status", "conditions"}, Description: "terraform plan, then apply; a plan that replaces the object says so in a condition (and is refused when the kind forbids replacement)."},
		{Name: "destroy", Trigger: "deleteRequested", Emits: []string{"finalizer"}, Description: "terraform destroy; the resource is removed once it succeeds."},
		{Name: "observe", Trigger: "observe", Emits: []string{"status", "conditions"}, Description: "for a resource whose management policy is observe: terraform import of its import.id while the state is empty, then a refresh-only plan; reports the object as it is and changes nothing."},
	}
	policy := Policy{TaskDeadlineSeconds: 3600, MaxTransientAttempts: 10}
	if opts.ResyncSeconds > 0 {
		policy.ResyncIntervalSeconds = opts.ResyncSeconds
		reactions = append(reactions, Reaction{Name: "drift", Trigger: "resync", Emits: []string{"status", "conditions"}, Description: "terraform plan against the real object; changes found are drift, reported in a condition and applied."})
	}
	return &Manifest{
		Type: "manifest", Kind: kind, KindVersion: 1, Owner: opts.Owner,
		Description:  description(typ, opts, rs.Block.Description),
		SpecSchema:   spec,
		StatusSchema: status,
		ConfigSchema: config,
		Policy:       policy,
		Finalizer:    finalizer,
		Reactions:    reactions,
	}, nil
}

// metaSchema is the status field stdterraform reports about its run.
var metaSchema = map[string]any{
	"type": "object", "additionalProperties": false,
	"description": "What stdterraform reports about the last apply.",
	"properties": map[string]any{
		"applied_at": map[string]any{"type": "string", "format": "date-time", "description": "When the last apply finished."},
		"version":    map[string]any{"type": "string", "description": "The terraform or tofu version that applied it."},
		"state":      map[string]any{"type": "string", "description": "Where the resource's state lives (backend, path or schema, workspace)."},
		"address":    map[string]any{"type": "string", "description": "The resource's address in the configuration stdterraform writes."},
		"replaced":   map[string]any{"type": "boolean", "description": "Whether the last apply replaced the object (destroyed and re-created it)."},
	},
}

// configSchema is a generated kind's config_schema: std.terraform's (the
// binary, the state backend, the environment), and the provider's own
// configuration block as "provider".
func configSchema(p *Schema) (map[string]any, error) {
	ms, err := catalog.Read(std.FS)
	if err != nil {
		return nil, fmt.Errorf("the built-in std kinds: %w", err)
	}
	var base map[string]any
	for _, m := range ms {
		if m.Manifest.GetKind() == "std.terraform" && m.Manifest.GetKindVersion() == 1 {
			base = m.Manifest.GetConfigSchema().AsMap()
		}
	}
	props, _ := base["properties"].(map[string]any)
	if props == nil {
		return nil, errors.New("the built-in std.terraform v1 has no config_schema properties")
	}
	var block *Block
	if p != nil {
		block = p.Block
	}
	provider, err := blockSchema(block, "", specSide, 0)
	if err != nil {
		return nil, fmt.Errorf("provider configuration: config.provider.%w (no kind can be generated)", err)
	}
	provider["description"] = "The provider's configuration block (credentials, region, …), written into the configuration of every run."
	props["provider"] = provider
	if env, ok := props["env"].(map[string]any); ok {
		// std.terraform's words send variables to spec.variables, which a
		// generated kind does not have.
		env["description"] = "Environment variables for terraform and the provider (credentials, regions, TF_CLI_CONFIG_FILE naming a provider mirror, …). TF_VAR_*, TF_LOG*, TF_WORKSPACE and the other variables terraform-exec manages are refused."
	}
	return base, nil
}

// description is a generated kind's description, within the server's
// 4,096 characters.
func description(typ string, opts Options, doc string) string {
	s := fmt.Sprintf("Terraform resource %s of provider %s %s, applied by stdworker's stdterraform (generated by stdworker kinds generate).", typ, opts.Source, opts.Version)
	if d := strings.Join(strings.Fields(doc), " "); d != "" {
		s += " " + d
	}
	const max = 4096
	if len(s) <= max {
		return s
	}
	cut := max - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// kindPattern is the server's rule for kind names.
var kindPattern = regexp.MustCompile(`^[a-z][a-z0-9]*([.-][a-z0-9]+)*$`)

// KindName is the rule that names a generated kind: "tf.", the provider's
// local name, ".", then the resource type without the "<local name>_"
// prefix, its '_' written '-': time_static of hashicorp/time is
// tf.time.static, aws_s3_bucket of hashicorp/aws tf.aws.s3-bucket. A type
// without the prefix keeps its whole name.
func KindName(local, typ string) (string, error) {
	rest := strings.TrimPrefix(typ, local+"_")
	if rest == "" {
		rest = typ
	}
	name := "tf." + local + "." + strings.ReplaceAll(rest, "_", "-")
	if len(name) > 63 || !kindPattern.MatchString(name) {
		return "", fmt.Errorf("kind name %q (from the naming rule) is not a kind name: at most 63 lower-case letters and digits in words separated by '.' or '-'", name)
	}
	return name, nil
}
