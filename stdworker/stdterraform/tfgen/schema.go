// Package tfgen turns a Terraform provider's schema (the output of
// `terraform providers schema -json`) into kind manifests, one per
// resource type, that stdworker's stdterraform provider serves with no
// module written by hand. See docs/stdworker-terraform.md, "Kinds from a
// provider".
package tfgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// The input is decoded into structs of its own rather than
// terraform-json's: those parse every attribute type while decoding, so
// one type the generator cannot map would fail the whole provider, where
// the rule is to skip only the resource type that holds it.

// Schemas is a `terraform providers schema -json` document.
type Schemas struct {
	FormatVersion   string                     `json:"format_version"`
	ProviderSchemas map[string]*ProviderSchema `json:"provider_schemas"`
}

// ProviderSchema is one provider's part of it.
type ProviderSchema struct {
	Provider          *Schema            `json:"provider"`
	ResourceSchemas   map[string]*Schema `json:"resource_schemas"`
	DataSourceSchemas map[string]*Schema `json:"data_source_schemas"`
}

// Schema is a resource type's (or the provider configuration's) schema.
type Schema struct {
	Version int64  `json:"version"`
	Block   *Block `json:"block"`
}

// Block is a configuration block: attributes and nested blocks.
type Block struct {
	Attributes  map[string]*Attribute `json:"attributes"`
	BlockTypes  map[string]*BlockType `json:"block_types"`
	Description string                `json:"description"`
	Deprecated  bool                  `json:"deprecated"`
}

// Attribute is one attribute of a block.
type Attribute struct {
	// Type is the attribute's cty type in its JSON form: "string",
	// ["list","number"], ["object",{"a":"bool"}], …; absent when
	// NestedType describes it.
	Type        json.RawMessage `json:"type"`
	NestedType  *NestedType     `json:"nested_type"`
	Description string          `json:"description"`
	Required    bool            `json:"required"`
	Optional    bool            `json:"optional"`
	Computed    bool            `json:"computed"`
	Sensitive   bool            `json:"sensitive"`
	Deprecated  bool            `json:"deprecated"`
	WriteOnly   bool            `json:"write_only"`
}

// NestedType is an attribute made of attributes (plugin framework).
type NestedType struct {
	Attributes  map[string]*Attribute `json:"attributes"`
	NestingMode string                `json:"nesting_mode"`
	MinItems    uint64                `json:"min_items"`
	MaxItems    uint64                `json:"max_items"`
}

// BlockType is a nested block and how often it may appear.
type BlockType struct {
	NestingMode string `json:"nesting_mode"`
	Block       *Block `json:"block"`
	MinItems    uint64 `json:"min_items"`
	MaxItems    uint64 `json:"max_items"`
}

// MaxSchemasSize bounds the document read (the largest providers' schemas
// are tens of megabytes).
const MaxSchemasSize = 256 << 20

// ParseSchemas decodes a `terraform providers schema -json` document.
// Errors say what is wrong with the document as a whole; a resource type
// the generator cannot map is reported by Generate, which skips it.
func ParseSchemas(raw []byte) (*Schemas, error) {
	if len(raw) > MaxSchemasSize {
		return nil, fmt.Errorf("provider schema: %d bytes, more than %d", len(raw), MaxSchemasSize)
	}
	var s Schemas
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("provider schema: not the JSON of `terraform providers schema -json`: %w", err)
	}
	if dec.More() {
		return nil, errors.New("provider schema: more than one JSON document")
	}
	if s.FormatVersion == "" {
		return nil, errors.New("provider schema: format_version: missing; want the output of `terraform providers schema -json`")
	}
	if len(s.ProviderSchemas) == 0 {
		return nil, errors.New("provider schema: provider_schemas: empty; the configuration it came from requires no provider")
	}
	return &s, nil
}
