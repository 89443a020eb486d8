// Package schema compiles and applies JSON Schema (draft 2020-12) documents:
// the spec, status, config and operation-input schemas of a kind manifest.
//
// It wraps github.com/santhosh-tekuri/jsonschema/v6 and adds what a server
// facing untrusted input needs: documented size, depth and number limits,
// no network or file access (every $ref must resolve inside the document),
// and errors that name the offending path in plain words.
//
// Dialect: a document without "$schema" is read as 2020-12; a document (or an
// embedded resource with "$id") may declare "$schema" only as
// "https://json-schema.org/draft/2020-12/schema". Older drafts are refused so
// that every kind in the catalog speaks one dialect and the schema-stability
// checks reason about one set of keywords.
//
// "format" is asserted, not just annotated: a value that claims format
// "email", "date-time", "uuid", "ipv4", "uri", "regex" and the other formats
// the underlying library knows must match it. Unknown formats are ignored.
// "pattern" and "patternProperties" use Go's RE2 syntax (linear time);
// patterns that need backtracking features such as lookahead do not compile.
//
// The package is also the one home of two JSON rules the validator relies
// on and other packages share: value equality (EqualJSON, as "const" and
// "enum" compare) and JSON pointers (JoinPointer, EscapeToken,
// UnescapeToken, ValueAt, ComparePointers, DisplayPointer).
package schema

// Limits on documents handled by this package. They bound the memory and
// time one schema or instance may cost the server.
const (
	// MaxSchemaSize is the largest schema accepted by Compile, measured as
	// its compact JSON encoding in bytes.
	MaxSchemaSize = 256 << 10
	// MaxDepth is the deepest nesting of objects and arrays accepted in a
	// schema (Compile) or an instance (Decode, Validate). The outermost
	// object or array is level 1.
	MaxDepth = 64
	// MaxNumberLength is the longest number literal accepted, in characters.
	MaxNumberLength = 128
	// MaxNumberExponent bounds the decimal exponent of a number literal
	// ("1e1000" is the largest power of ten accepted). Exact arithmetic on
	// larger exponents costs time and memory out of proportion to the input.
	MaxNumberExponent = 1000
)
