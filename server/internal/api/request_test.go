package api

import (
	"errors"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/convergehq/converge/server/internal/limits"
)

func TestRequestDocument(t *testing.T) {
	raw, doc, err := requestDocument("input", nil)
	if err != nil || string(raw) != "{}" || len(doc.(map[string]any)) != 0 {
		t.Errorf("absent document = %s, %v, %v; want {}", raw, doc, err)
	}

	small, err := structpb.NewStruct(map[string]any{"size": 2})
	if err != nil {
		t.Fatal(err)
	}
	raw, doc, err = requestDocument("input", small)
	if err != nil || !strings.Contains(string(raw), `"size"`) || doc.(map[string]any)["size"] == nil {
		t.Errorf("small document = %s, %v, %v; want it read", raw, doc, err)
	}

	big, err := structpb.NewStruct(map[string]any{"x": strings.Repeat("a", limits.MaxSpecBytes)})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = requestDocument("resources[1] default/db/a: spec", big)
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "resources[1] default/db/a: spec is ") ||
		!strings.Contains(err.Error(), "the limit is 524288") {
		t.Errorf("oversized document: %v; want InvalidArgument naming the field and the limit", err)
	}

	deep := map[string]any{}
	for range 70 {
		deep = map[string]any{"a": deep}
	}
	nested, err := structpb.NewStruct(deep)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = requestDocument("config", nested)
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.HasPrefix(message(err), "config: ") {
		t.Errorf("too deep a document: %v; want InvalidArgument naming config", err)
	}
}

func message(err error) string {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce.Message()
	}
	return ""
}
