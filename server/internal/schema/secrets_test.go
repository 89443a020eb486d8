package schema

import (
	"strings"
	"testing"
)

func TestSecretsAreFoundWhereverTheSchemaPutsThem(t *testing.T) {
	sch := mustCompile(t, `{
		"type": "object",
		"$defs": {"cred": {"type": "object", "properties": {"token": {"type": "string", "x-converge-secret": true}}}},
		"properties": {
			"password": {"type": "string", "writeOnly": true},
			"plain": {"type": "string", "writeOnly": false},
			"users": {"type": "array", "items": {"type": "object", "properties": {"key": {"type": "string", "writeOnly": true}}}},
			"vault": {"type": "object", "additionalProperties": {"type": "string", "writeOnly": true}},
			"auth": {"$ref": "#/$defs/cred"},
			"whole": {"type": "object", "writeOnly": true, "properties": {"inner": {"type": "string", "writeOnly": true}}},
			"either": {"anyOf": [{"type": "string", "writeOnly": true}, {"type": "null"}]}
		}
	}`)
	var got []string
	for _, p := range sch.Secrets() {
		got = append(got, p.String())
	}
	want := map[string]bool{"/password": true, "/users/*/key": true, "/vault/*": true, "/auth/token": true, "/whole": true, "/either": true}
	if len(got) != len(want) {
		t.Fatalf("Secrets = %v, want %v", got, want)
	}
	for _, g := range got {
		if !want[g] {
			t.Errorf("unexpected secret path %s (all: %v)", g, got)
		}
	}
	if !sch.IsSecret([]string{"users", "3", "key"}) || !sch.IsSecret([]string{"whole", "inner"}) || sch.IsSecret([]string{"plain"}) {
		t.Error("IsSecret disagrees with the paths")
	}
}

func TestRecursiveSchemaSecretsTerminate(t *testing.T) {
	sch := mustCompile(t, `{"$defs":{"n":{"type":"object","properties":{"s":{"writeOnly":true},"next":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}`)
	if len(sch.Secrets()) == 0 || sch.Secrets()[0].String() != "/s" {
		t.Errorf("Secrets = %v, want /s first", sch.Secrets())
	}
}

func TestViolationsAtASecretDoNotDescribeTheValue(t *testing.T) {
	sch := mustCompile(t, `{"type":"object","properties":{"pin":{"type":"string","writeOnly":true,"maxLength":3},"n":{"type":"string","maxLength":3}}}`)
	err := sch.Validate(map[string]any{"pin": "s3cr3t-value", "n": "toolong"})
	if err == nil {
		t.Fatal("Validate accepted an over-long pin")
	}
	msg := err.Error()
	if !strings.Contains(msg, "/pin: "+secretMessage) || !strings.Contains(msg, "/n: must be at most 3 characters long, got 7") {
		t.Errorf("Validate = %q, want the pin's message withheld and n's kept", msg)
	}
}

func TestLeakySecretsAreReported(t *testing.T) {
	sch := mustCompile(t, `{"type":"object","properties":{"a":{"writeOnly":true,"default":"x","examples":["y"]},"b":{"x-converge-secret":true,"const":"z"},"c":{"default":"fine"}}}`)
	got := strings.Join(sch.LeakySecrets(), ",")
	for _, want := range []string{"/properties/a/default", "/properties/a/examples", "/properties/b/const"} {
		if !strings.Contains(got, want) {
			t.Errorf("LeakySecrets = %s, want %s among them", got, want)
		}
	}
	if strings.Contains(got, "/properties/c") {
		t.Errorf("LeakySecrets = %s names a property that is not secret", got)
	}
}
