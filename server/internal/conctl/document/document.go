// Package document parses the YAML and JSON documents conctl applies.
//
// Every document names what it is with a top-level "type" key; the other
// keys are the fields of that type's proto message, by their proto
// (snake_case) or JSON names:
//
//	type: resource
//	kind: greeting
//	kind_version: 1
//	name: hello-world
//	spec:
//	  greeting: Hello
//
// The types are manifest (a kind), providerconfig (settings for the workers
// of a kind version), reactorbinding (which resource transitions a reactor
// kind hears of) and resource. Fields the server sets (revision,
// created_at, updated_at) are refused in providerconfig and reactorbinding
// documents rather than silently dropped.
//
// A YAML file may hold several documents separated by "---"; a JSON file
// holds an object, an array of objects, or a sequence of either. Parsing is
// strict (unknown fields, wrong shapes and rule violations are errors) and
// every error names its source, document and line.
package document

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// Document is one parsed document.
type Document struct {
	// Source is the file the document came from, or "stdin".
	Source string
	// Index is the document's 1-based position in Source.
	Index int
	// Line is the line the document's content starts on.
	Line int
	// Type is the document's "type": one of Types().
	Type string
	// Message is the parsed document: a *convergev1.KindManifest for
	// "manifest", a *convergev1.ProviderConfig for "providerconfig", a
	// *convergev1.ReactorBinding for "reactorbinding" and a
	// *convergev1.ApplyResourceRequest for "resource".
	Message proto.Message
}

// Where names the document for messages: "a.yaml: document 2 (line 14)".
func (d *Document) Where() string {
	return (&Error{Source: d.Source, Index: d.Index, Line: d.Line}).where()
}

// docType is one kind of document: the message it parses into, the fields
// of that message a document may not set, and how to complete it before it
// is checked.
type docType struct {
	name       string
	new        func() proto.Message
	outputOnly []string
	fill       func(m proto.Message, o *options)
}

// serverSet are the fields the server fills in on provider configs and
// reactor bindings.
var serverSet = []string{"revision", "created_at", "updated_at"}

// docTypes is every document type, in the order conctl applies them.
// Adding one is adding a line here.
var docTypes = []docType{
	{name: "manifest", new: func() proto.Message { return new(convergev1.KindManifest) }},
	{name: "providerconfig", new: func() proto.Message { return new(convergev1.ProviderConfig) }, outputOnly: serverSet},
	{name: "reactorbinding", new: func() proto.Message { return new(convergev1.ReactorBinding) }, outputOnly: serverSet},
	{name: "resource", new: func() proto.Message { return new(convergev1.ApplyResourceRequest) }, fill: fillResource},
}

// isOutputOnly reports whether key names a field documents of t may not set,
// by its proto or JSON name.
func (t docType) isOutputOnly(key string) bool {
	for _, name := range t.outputOnly {
		if key == name || key == jsonName(name) {
			return true
		}
	}
	return false
}

func fillResource(m proto.Message, o *options) {
	r := m.(*convergev1.ApplyResourceRequest)
	if r.Namespace == "" {
		r.Namespace = o.namespace
	}
}

// Types returns the names a document's "type" may have.
func Types() []string {
	names := make([]string, len(docTypes))
	for i, t := range docTypes {
		names[i] = t.name
	}
	return names
}

func lookupType(name string) (docType, bool) {
	for _, t := range docTypes {
		if t.name == name {
			return t, true
		}
	}
	return docType{}, false
}

// Option configures parsing.
type Option func(*options)

type options struct {
	namespace string
}

// WithDefaultNamespace sets the namespace of resources that name none. The
// default is "default".
func WithDefaultNamespace(ns string) Option {
	return func(o *options) {
		if ns != "" {
			o.namespace = ns
		}
	}
}

func newOptions(opts []Option) *options {
	o := &options{namespace: "default"}
	for _, opt := range opts {
		opt(o)
	}
	return o
}

// Error is a problem with one input, located as precisely as known.
type Error struct {
	// Source is the file path or "stdin".
	Source string
	// Index is the 1-based document number, 0 when the problem is the file's.
	Index int
	// Line is the 1-based line, 0 when unknown.
	Line int
	// Message says what is wrong, starting with the field path when there
	// is one.
	Message string
}

func (e *Error) Error() string {
	return e.where() + ": " + e.Message
}

func (e *Error) where() string {
	var b strings.Builder
	b.WriteString(e.Source)
	switch {
	case e.Index > 0 && e.Line > 0:
		fmt.Fprintf(&b, ": document %d (line %d)", e.Index, e.Line)
	case e.Index > 0:
		fmt.Fprintf(&b, ": document %d", e.Index)
	case e.Line > 0:
		fmt.Fprintf(&b, ": line %d", e.Line)
	}
	return b.String()
}
