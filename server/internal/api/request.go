package api

import (
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/convergehq/converge/server/internal/limits"
	"github.com/convergehq/converge/server/internal/schema"
)

// requestDocument reads a JSON object a request carries as a Struct: a
// spec, a provider config or an operation's input. Absent is {}. Like a
// spec, it must be at most limits.MaxSpecBytes of compact JSON, and it
// must decode within package schema's depth and number limits. field
// names the document in errors, e.g. "input" or "resources[2] default/db/a: spec".
func requestDocument(field string, v *structpb.Struct) (raw []byte, doc any, err error) {
	raw = []byte("{}")
	if v != nil {
		if raw, err = protojson.Marshal(v); err != nil {
			return nil, nil, invalid("%s: %v", field, err)
		}
	}
	if len(raw) > limits.MaxSpecBytes {
		return nil, nil, invalid("%s is %d bytes; the limit is %d (docs/limits.md)", field, len(raw), limits.MaxSpecBytes)
	}
	if doc, err = schema.Decode(raw); err != nil {
		return nil, nil, invalid("%s: %v", field, err)
	}
	return raw, doc, nil
}
