package stdterraform

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func TestBindingOf(t *testing.T) {
	manifest := func(b map[string]any) *convergev1.KindManifest {
		s, err := structpb.NewStruct(map[string]any{"type": "object", BindingKeyword: b})
		if err != nil {
			t.Fatal(err)
		}
		return &convergev1.KindManifest{SpecSchema: s}
	}
	if b, err := BindingOf(&convergev1.KindManifest{}); b != nil || err != nil {
		t.Errorf("a manifest without a binding: %v, %v; want nil, nil", b, err)
	}
	b, err := BindingOf(manifest(map[string]any{"source": "registry.terraform.io/hashicorp/time", "version": "0.14.2", "type": "time_static"}))
	if err != nil || b.LocalName() != "time" || b.Address() != "time_static.this" {
		t.Errorf("BindingOf: %+v, %v", b, err)
	}
	for field, bad := range map[string]map[string]any{
		"source":  {"source": "time", "version": "0.14.2", "type": "time_static"},
		"version": {"source": "hashicorp/time", "version": "~> 0.14", "type": "time_static"},
		"type":    {"source": "hashicorp/time", "version": "0.14.2", "type": "Time-Static"},
		"replace": {"source": "hashicorp/time", "version": "0.14.2", "type": "time_static", "replace": "never"},
	} {
		if _, err := BindingOf(manifest(bad)); err == nil || !strings.Contains(err.Error(), "x-terraform."+field) {
			t.Errorf("binding with a bad %s: %v; want an error naming it", field, err)
		}
	}
}

func TestMainConfig(t *testing.T) {
	b := &Binding{Source: "hashicorp/aws", Version: "5.0.0", Type: "aws_s3_bucket"}
	s, err := parseGenSpec(json.RawMessage(`{"bucket":"logs-${var.x}","import_id":"logs"}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := mainConfig(b, json.RawMessage(`{"region":"eu-west-1"}`), s, true)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(doc)
	want := `{"import":[{"id":"logs","to":"aws_s3_bucket.this"}],"provider":{"aws":{"region":"eu-west-1"}},"resource":{"aws_s3_bucket":{"this":{"bucket":"logs-$${var.x}"}}},"terraform":{"required_providers":{"aws":{"source":"registry.terraform.io/hashicorp/aws","version":"5.0.0"}}}}`
	if string(got) != want {
		t.Errorf("main.tf.json\n%s\nwant\n%s", got, want)
	}
	if _, err := mainConfig(b, json.RawMessage(`[1]`), s, false); err == nil || !strings.Contains(err.Error(), "config.provider") {
		t.Errorf("a provider config that is not an object: %v; want an error naming config.provider", err)
	}
	if _, err := parseGenSpec(json.RawMessage(`{"provisioner":{"local-exec":{"command":"id"}}}`)); err == nil || !strings.Contains(err.Error(), "spec.provisioner: a Terraform meta-argument") {
		t.Errorf("a provisioner in the spec: %v; want it refused, named", err)
	}
	if _, err := parseGenSpec(json.RawMessage(`{"import_id":3}`)); err == nil || !strings.Contains(err.Error(), "spec.import_id") {
		t.Errorf("a numeric import_id: %v; want an error naming spec.import_id", err)
	}
}
