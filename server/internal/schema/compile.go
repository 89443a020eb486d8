package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema is a compiled JSON Schema document. It is immutable and safe for
// concurrent use.
type Schema struct {
	name     string
	compiled *jsonschema.Schema
	secrets  []SecretPath
	leaky    []string
}

// Name returns the name given to Compile.
func (s *Schema) Name() string {
	if s == nil {
		return ""
	}
	return s.name
}

// CompileError is returned by Compile when a document is not an acceptable
// schema. Each violation's Path points into the schema document.
type CompileError struct {
	// Name is the name given to Compile, e.g. "spec_schema".
	Name string
	// Violations are sorted by path, then message.
	Violations []Violation
}

// Error renders the first violations as "spec_schema/properties/a/type:
// message", joined by "; ".
func (e *CompileError) Error() string {
	parts := make([]string, 0, maxRendered+1)
	for i, v := range e.Violations {
		if i == maxRendered {
			parts = append(parts, fmt.Sprintf("and %d more", len(e.Violations)-maxRendered))
			break
		}
		parts = append(parts, e.Name+v.Path+": "+v.Message)
	}
	return strings.Join(parts, "; ")
}

// baseURL names the document inside the compiler. It is never fetched: the
// loader refuses every URL, so only references into the document resolve.
const (
	baseDir = "converge:///"
	baseURL = baseDir + "schema.json"
)

// Compile checks that doc is a valid JSON Schema 2020-12 document and
// compiles it. doc is decoded JSON: what Decode, encoding/json (with or
// without UseNumber) or structpb.Struct.AsMap produce. name prefixes the
// paths in errors, e.g. "spec_schema". Compile never touches the network or
// the file system: a $ref that leaves the document is an error naming it.
// Errors are *CompileError.
func Compile(name string, doc any) (_ *Schema, err error) {
	fail := func(vs ...Violation) error { return &CompileError{Name: name, Violations: sortViolations(vs)} }

	norm, err := normalize(doc)
	if err != nil {
		var ve *valueError
		if errors.As(err, &ve) {
			return nil, fail(ve.violation())
		}
		return nil, fail(Violation{Message: err.Error()})
	}
	if n, err := encodedSize(norm); err != nil {
		return nil, fail(Violation{Message: err.Error()})
	} else if n > MaxSchemaSize {
		return nil, fail(Violation{Message: fmt.Sprintf("schema is %d bytes of JSON; the limit is %d", n, MaxSchemaSize)})
	}
	w := walk(norm)
	var bad []Violation
	for _, d := range w.dialects {
		if !is2020(d.value) {
			bad = append(bad, Violation{Path: d.ptr, Message: fmt.Sprintf("dialect %q is not supported; use %q or leave $schema out", d.value, jsonschema.Draft2020.String())})
		}
	}
	if len(bad) > 0 {
		return nil, fail(bad...)
	}

	defer func() {
		// The library panics on states it considers impossible; a request
		// must never take the server down with it.
		if r := recover(); r != nil {
			err = fail(Violation{Message: fmt.Sprintf("schema compiler failed: %v", r)})
		}
	}()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(baseURL, norm); err != nil {
		return nil, fail(Violation{Message: err.Error()})
	}
	compiled, err := c.Compile(baseURL)
	if err != nil {
		return nil, fail(compileViolations(err, norm, w)...)
	}
	secrets, leaky := scanSecrets(norm)
	return &Schema{name: name, compiled: compiled, secrets: secrets, leaky: leaky}, nil
}

// encodedSize is the length of v's compact JSON encoding.
func encodedSize(v any) (int, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return 0, fmt.Errorf("schema cannot be encoded as JSON: %v", err)
	}
	return buf.Len() - 1, nil // Encode appends a newline
}

// refuseLoader is the compiler's only way out of the document, and it
// refuses: schemas are data applied over the API and must not make the
// server fetch anything.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s is outside the document", url)
}
