package manifest

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func TestCanonicalIsStableAndDropsOutputOnlyFields(t *testing.T) {
	m := parseManifest(t, compositeJSON)
	first, err := Canonical(m)
	if err != nil {
		t.Fatalf("Canonical: %v", err)
	}
	// Struct maps iterate in random order and protojson varies its
	// whitespace; repeated encodings must still be identical.
	for range 20 {
		again, err := Canonical(parseManifest(t, compositeJSON))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, again) {
			t.Fatalf("Canonical is not stable:\n%s\n%s", first, again)
		}
	}

	stamped := proto.CloneOf(m)
	stamped.Revision = 42
	stamped.CreatedAt = timestamppb.Now()
	stamped.UpdatedAt = timestamppb.Now()
	got, err := Canonical(stamped)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, got) {
		t.Errorf("output-only fields changed the canonical form:\n%s\n%s", first, got)
	}
	if stamped.Revision != 42 {
		t.Error("Canonical modified its argument")
	}
	for _, field := range []string{"revision", "created_at", "updated_at"} {
		if bytes.Contains(got, []byte(`"`+field+`"`)) {
			t.Errorf("canonical form contains %s: %s", field, got)
		}
	}

	changed := proto.CloneOf(m)
	changed.Policy.MaxInflight = 5
	other, err := Canonical(changed)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(first, other) {
		t.Error("a policy change did not change the canonical form")
	}
}

func TestCanonicalFormat(t *testing.T) {
	m := parseManifest(t, `{"kind":"a","kind_version":1,"spec_schema":{"type":"object","maximum":1.5,"description":"<b>&"},
		"reactions":[{"name":"r","trigger":"specChange","emits":["status"]}]}`)
	got, err := Canonical(m)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"a","kind_version":1,"reactions":[{"emits":["status"],"name":"r","trigger":"specChange"}],` +
		`"spec_schema":{"description":"<b>&","maximum":1.5,"type":"object"}}`
	if string(got) != want {
		t.Errorf("Canonical =\n%s\nwant\n%s", got, want)
	}
}

func TestFromCanonicalRoundTrip(t *testing.T) {
	m := parseManifest(t, compositeJSON)
	data, err := Canonical(m)
	if err != nil {
		t.Fatal(err)
	}
	back, err := FromCanonical(data)
	if err != nil {
		t.Fatalf("FromCanonical: %v", err)
	}
	if !proto.Equal(m, back) {
		t.Errorf("round trip changed the manifest:\n%v\n%v", m, back)
	}
	if _, err := FromCanonical([]byte(`{"kind":"a","nonsense":1}`)); err == nil || !strings.Contains(err.Error(), "nonsense") {
		t.Errorf("FromCanonical(unknown field) = %v, want an error naming the field", err)
	}
	if _, err := Canonical(nil); err == nil {
		t.Error("Canonical(nil) = nil error")
	}
}
