package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// openAPIPath is the document the server serves at /openapi.json,
// generated from the protos by scripts/gen.sh.
const openAPIPath = "server/internal/api/openapi/openapi.json"

// The subset of OpenAPI 3 the generated document uses.
type openAPI struct {
	Info struct {
		Title       string `json:"title"`
		Description string `json:"description"`
	} `json:"info"`
	Paths      map[string]map[string]operation `json:"paths"`
	Components struct {
		Schemas map[string]schema `json:"schemas"`
	} `json:"components"`
}

type operation struct {
	OperationID string      `json:"operationId"`
	Summary     string      `json:"summary"`
	Description string      `json:"description"`
	Parameters  []parameter `json:"parameters"`
	RequestBody *struct {
		Content map[string]struct {
			Schema schema `json:"schema"`
		} `json:"content"`
	} `json:"requestBody"`
	Responses map[string]struct {
		Description string `json:"description"`
		Content     map[string]struct {
			Schema schema `json:"schema"`
		} `json:"content"`
	} `json:"responses"`
}

type parameter struct {
	Name        string `json:"name"`
	In          string `json:"in"`
	Required    bool   `json:"required"`
	Description string `json:"description"`
	Schema      schema `json:"schema"`
}

type schema struct {
	Ref                  string            `json:"$ref"`
	Type                 string            `json:"type"`
	Format               string            `json:"format"`
	Description          string            `json:"description"`
	Title                string            `json:"title"`
	ReadOnly             bool              `json:"readOnly"`
	Enum                 []string          `json:"enum"`
	Items                *schema           `json:"items"`
	Properties           map[string]schema `json:"properties"`
	AdditionalProperties json.RawMessage   `json:"additionalProperties"`
}

// httpMethods fixes the order operations of one path are listed in.
var httpMethods = []string{"get", "post", "put", "patch", "delete"}

func readOpenAPI(path string) (*openAPI, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read OpenAPI document: %w", err)
	}
	var doc openAPI
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parse OpenAPI document %s: %w", path, err)
	}
	return &doc, nil
}

// writeREST renders every path and operation: a summary table, then one
// section per operation with its parameters, body and response.
func writeREST(b *bytes.Buffer, doc *openAPI) {
	paths := make([]string, 0, len(doc.Paths))
	for p := range doc.Paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	type entry struct {
		method, path string
		op           operation
	}
	var ops []entry
	for _, p := range paths {
		for _, m := range httpMethods {
			if op, ok := doc.Paths[p][m]; ok {
				ops = append(ops, entry{strings.ToUpper(m), p, op})
			}
		}
	}
	b.WriteString("| Method | Path | RPC |\n|---|---|---|\n")
	for _, e := range ops {
		fmt.Fprintf(b, "| `%s` | [`%s`](#%s) | %s |\n", e.method, e.path, opAnchor(e.op), rpcName(e.op))
	}
	b.WriteString("\n")
	for _, e := range ops {
		fmt.Fprintf(b, "### %s %s {#%s}\n\n", e.method, e.path, opAnchor(e.op))
		fmt.Fprintf(b, "RPC: `converge.v1.ControlService/%s`\n\n", rpcName(e.op))
		for _, text := range []string{e.op.Summary, e.op.Description} {
			if text != "" {
				fmt.Fprintf(b, "%s\n\n", prose(text))
			}
		}
		if len(e.op.Parameters) > 0 {
			b.WriteString("| Parameter | In | Type | Description |\n|---|---|---|---|\n")
			for _, p := range e.op.Parameters {
				name := "`" + p.Name + "`"
				if p.Required {
					name += " (required)"
				}
				fmt.Fprintf(b, "| %s | %s | %s | %s |\n", name, p.In, typeOf(p.Schema), cell(p.Description))
			}
			b.WriteString("\n")
		}
		if e.op.RequestBody != nil {
			if c, ok := e.op.RequestBody.Content["application/json"]; ok {
				fmt.Fprintf(b, "Request body: %s\n\n", typeOf(c.Schema))
			}
		}
		if r, ok := e.op.Responses["200"]; ok {
			if c, ok := r.Content["application/json"]; ok {
				fmt.Fprintf(b, "Response: %s\n\n", typeOf(c.Schema))
			}
		}
	}
}

// writeSchemas renders every component schema as a field table.
func writeSchemas(b *bytes.Buffer, doc *openAPI) {
	names := make([]string, 0, len(doc.Components.Schemas))
	for n := range doc.Components.Schemas {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := doc.Components.Schemas[n]
		fmt.Fprintf(b, "### %s {#%s}\n\n", n, schemaAnchor(n))
		if s.Description != "" {
			fmt.Fprintf(b, "%s\n\n", prose(s.Description))
		}
		if len(s.Enum) > 0 {
			fmt.Fprintf(b, "Values: %s\n\n", codeList(s.Enum))
		}
		if len(s.Properties) == 0 {
			if s.Type != "" && s.Type != "object" {
				fmt.Fprintf(b, "Type: %s\n\n", typeOf(s))
			}
			continue
		}
		props := make([]string, 0, len(s.Properties))
		for p := range s.Properties {
			props = append(props, p)
		}
		sort.Strings(props)
		b.WriteString("| Field | Type | Description |\n|---|---|---|\n")
		for _, p := range props {
			f := s.Properties[p]
			desc := cell(f.Description)
			if f.ReadOnly {
				desc = strings.TrimSpace("Output only. " + desc)
			}
			if len(f.Enum) > 0 {
				desc = strings.TrimSpace(desc + " Values: " + codeList(f.Enum) + ".")
			}
			fmt.Fprintf(b, "| `%s` | %s | %s |\n", p, typeOf(f), desc)
		}
		b.WriteString("\n")
	}
}

// typeOf names a schema's type, linking references to their section.
func typeOf(s schema) string {
	switch {
	case s.Ref != "":
		name := s.Ref[strings.LastIndex(s.Ref, "/")+1:]
		return fmt.Sprintf("[%s](#%s)", name, schemaAnchor(name))
	case s.Type == "array" && s.Items != nil:
		return "array of " + typeOf(*s.Items)
	case s.Type == "object" && len(s.AdditionalProperties) > 0 && string(s.AdditionalProperties) != "true":
		var v schema
		if json.Unmarshal(s.AdditionalProperties, &v) == nil {
			return "map of string to " + typeOf(v)
		}
		return "object"
	case s.Format != "":
		return s.Type + " (" + s.Format + ")"
	case s.Type == "":
		return "any"
	}
	return s.Type
}

func rpcName(op operation) string {
	return strings.TrimPrefix(op.OperationID, "ControlService_")
}

func opAnchor(op operation) string { return "rest-" + strings.ToLower(rpcName(op)) }

func schemaAnchor(name string) string { return "schema-" + strings.ToLower(name) }

func codeList(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = "`" + v + "`"
	}
	return strings.Join(quoted, ", ")
}
