package stdterraform

import (
	"encoding/json"
	"fmt"
	"regexp"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// A generated kind (stdworker kinds generate) is one resource type of one
// Terraform provider. Its manifest says which, in a keyword of its own at
// the top of spec_schema: JSON Schema ignores keywords it does not know,
// the stability checker treats them as annotations, and the manifest stays
// the one place that says what a kind is, so a stdworker entry needs
// nothing but "provider: stdterraform" to serve it.
const BindingKeyword = "x-terraform"

// Names a generated kind reserves beside the resource type's own
// attributes. Terraform attribute names never collide with them in
// practice; the generator refuses a resource type where one would.
const (
	// ImportIDField is the spec field that adopts an existing object: its
	// value is the provider's import ID, used when the resource's state is
	// still empty.
	ImportIDField = "import_id"
	// MetaField is the status field holding what stdterraform reports
	// about the run itself (applied_at, version, state, address).
	MetaField = "terraform"
)

// Replacement policies of a generated kind (Binding.Replace).
const (
	ReplaceAllow  = "allow"
	ReplaceForbid = "forbid"
)

// Binding is what a generated kind's BindingKeyword holds.
type Binding struct {
	// Source is the provider's source address, e.g. "hashicorp/time" or
	// "registry.terraform.io/hashicorp/time".
	Source string `json:"source"`
	// Version is the provider version, exactly, e.g. "0.14.2".
	Version string `json:"version"`
	// Type is the resource type, e.g. "time_static".
	Type string `json:"type"`
	// Replace is ReplaceAllow (the default) or ReplaceForbid: a plan that
	// would destroy and re-create the object is then refused, terminally.
	Replace string `json:"replace,omitempty"`
}

var (
	sourcePattern  = regexp.MustCompile(`^([a-z0-9.-]+/)?[a-z0-9][a-z0-9-]*/[a-z0-9][a-z0-9-]*$`)
	versionPattern = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$`)
	typePattern    = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

// BindingOf returns the binding a manifest's spec_schema carries, nil when
// it carries none (a hand-written kind such as std.terraform).
func BindingOf(m *convergev1.KindManifest) (*Binding, error) {
	v, ok := m.GetSpecSchema().GetFields()[BindingKeyword]
	if !ok {
		return nil, nil
	}
	raw, err := v.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("spec_schema.%s: %w", BindingKeyword, err)
	}
	var b Binding
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("spec_schema.%s: %w", BindingKeyword, err)
	}
	if err := b.Check(); err != nil {
		return nil, err
	}
	return &b, nil
}

// Check reports the first field of b that cannot work, by name.
func (b Binding) Check() error {
	field := "spec_schema." + BindingKeyword
	switch {
	case !sourcePattern.MatchString(b.Source):
		return fmt.Errorf("%s.source: %q is not a provider source address ([HOST/]NAMESPACE/NAME)", field, b.Source)
	case !versionPattern.MatchString(b.Version):
		return fmt.Errorf("%s.version: %q is not an exact provider version (X.Y.Z)", field, b.Version)
	case !typePattern.MatchString(b.Type):
		return fmt.Errorf("%s.type: %q is not a resource type name", field, b.Type)
	case b.Replace != "" && b.Replace != ReplaceAllow && b.Replace != ReplaceForbid:
		return fmt.Errorf("%s.replace: %q must be %q or %q", field, b.Replace, ReplaceAllow, ReplaceForbid)
	}
	return nil
}

// LocalName is the provider's local name in the configuration: the last
// part of its source address ("time" for hashicorp/time).
func (b Binding) LocalName() string {
	m := sourcePattern.FindString(b.Source)
	for i := len(m) - 1; i >= 0; i-- {
		if m[i] == '/' {
			return m[i+1:]
		}
	}
	return m
}

// Address is the resource's address in the configuration stdterraform
// writes for it.
func (b Binding) Address() string { return b.Type + ".this" }
