package manifest

import (
	"errors"
	"strings"
	"testing"

	"github.com/convergehq/converge/server/internal/schema"
)

func TestKindVerbs(t *testing.T) {
	k, err := Compile(parseManifest(t, compositeJSON))
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	if !k.HasVerb("restart") || k.HasVerb("resize") {
		t.Errorf("HasVerb(restart), HasVerb(resize) = %v, %v; want true, false", k.HasVerb("restart"), k.HasVerb("resize"))
	}
	if got := strings.Join(k.Verbs(), ","); got != "restart" {
		t.Errorf("Verbs() = %q, want restart", got)
	}
	if err := k.ValidateInput("restart", map[string]any{"force": true}); err != nil {
		t.Errorf("valid input: %v", err)
	}
	err = k.ValidateInput("restart", map[string]any{"force": "yes"})
	var ve *schema.ValidationError
	if !errors.As(err, &ve) || len(ve.Violations) != 1 || ve.Violations[0].Path != "/force" {
		t.Errorf("invalid input: err = %v, want one violation at /force", err)
	}
	err = k.ValidateInput("resize", map[string]any{})
	if err == nil || errors.As(err, &ve) || !strings.Contains(err.Error(), `verb "resize" is not declared`) ||
		!strings.Contains(err.Error(), "declared verbs: restart") {
		t.Errorf("unknown verb: err = %v", err)
	}

	r, err := Compile(parseManifest(t, reactorJSON))
	if err != nil {
		t.Fatalf("Compile reactor: %v", err)
	}
	if len(r.Verbs()) != 0 {
		t.Errorf("reactor Verbs() = %v, want none", r.Verbs())
	}
	if err := r.ValidateInput("restart", nil); err == nil || !strings.Contains(err.Error(), "declares no operations") {
		t.Errorf("kind without operations: err = %v", err)
	}
}

func TestValidateInputWithoutSchemaAcceptsAnything(t *testing.T) {
	m := parseManifest(t, compositeJSON)
	m.Operations[0].InputSchema = nil
	k, err := Compile(m)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	if err := k.ValidateInput("restart", map[string]any{"anything": []any{1.0, "x"}}); err != nil {
		t.Errorf("no input_schema: %v", err)
	}
}
