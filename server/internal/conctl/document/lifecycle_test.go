package document_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/conctl/document"
)

const providerConfigYAML = `type: providerconfig
kind: greeting
kind_version: 1
name: default
description: The account every greeting uses.
config:
  account: "123456789012"
  region: eu-west-1
`

const reactorBindingYAML = `type: reactorbinding
name: notify-failures
watch_kind: greeting
transitions: [failed, degraded]
label_selector: team=web
reactor_kind: notifier
reactor_kind_version: 1
`

func TestParseLifecycleDocuments(t *testing.T) {
	for _, tc := range []struct {
		name, source, data string
		want               proto.Message
	}{
		{"provider config", "pc.yaml", providerConfigYAML, &convergev1.ProviderConfig{
			Kind: "greeting", KindVersion: 1, Name: "default", Description: "The account every greeting uses.",
			Config: mustStruct(t, `{"account":"123456789012","region":"eu-west-1"}`),
		}},
		{"provider config by JSON names", "pc.json",
			`{"type":"providerconfig","kind":"greeting","kindVersion":2,"name":"eu","config":{"region":"eu-central-1"}}`,
			&convergev1.ProviderConfig{Kind: "greeting", KindVersion: 2, Name: "eu", Config: mustStruct(t, `{"region":"eu-central-1"}`)}},
		{"provider config without config", "pc.yaml", "type: providerconfig\nkind: greeting\nkind_version: 1\nname: empty\n",
			&convergev1.ProviderConfig{Kind: "greeting", KindVersion: 1, Name: "empty"}},
		{"reactor binding", "rb.yaml", reactorBindingYAML, &convergev1.ReactorBinding{
			Name: "notify-failures", WatchKind: "greeting", Transitions: []string{"failed", "degraded"},
			LabelSelector: "team=web", ReactorKind: "notifier", ReactorKindVersion: 1,
		}},
		{"disabled binding of one version", "rb.yaml",
			"type: reactorbinding\nname: audit\nwatch_kind: vpc\nwatch_kind_version: 2\ntransitions: [created, deleted]\nreactor_kind: audit\nreactor_kind_version: 3\ndisabled: true\n",
			&convergev1.ReactorBinding{Name: "audit", WatchKind: "vpc", WatchKindVersion: 2, Transitions: []string{"created", "deleted"},
				ReactorKind: "audit", ReactorKindVersion: 3, Disabled: true}},
		{"resource naming a provider config", "r.yaml", resourceYAML + "provider_config: eu\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := document.Parse(tc.source, []byte(tc.data))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(docs) != 1 {
				t.Fatalf("got %d documents, want 1", len(docs))
			}
			if tc.want == nil {
				r := docs[0].Message.(*convergev1.ApplyResourceRequest)
				if r.GetProviderConfig() != "eu" {
					t.Fatalf("provider_config = %q, want eu", r.GetProviderConfig())
				}
				return
			}
			if !proto.Equal(docs[0].Message, tc.want) {
				t.Fatalf("got  %v\nwant %v", docs[0].Message, tc.want)
			}
		})
	}
}

func TestParseDocumentTypes(t *testing.T) {
	want := "manifest,providerconfig,reactorbinding,resource"
	if got := strings.Join(document.Types(), ","); got != want {
		t.Fatalf("Types() = %s, want %s (the order conctl applies them in)", got, want)
	}
	docs, err := document.Parse("all.yaml", []byte(manifestYAML+"---\n"+providerConfigYAML+"---\n"+reactorBindingYAML+"---\n"+resourceYAML))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range docs {
		got = append(got, d.Type)
	}
	if strings.Join(got, ",") != want {
		t.Fatalf("types = %v", got)
	}
}

func TestParseLifecycleErrors(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
	}{
		{"server-set fields are refused", providerConfigYAML + "revision: 3\ncreatedAt: \"2026-01-01T00:00:00Z\"\n",
			"x.yaml: document 1 (line 9): revision: set by the server; leave it out\n" +
				"x.yaml: document 1 (line 10): createdAt: set by the server; leave it out"},
		{"config must be a mapping", "type: providerconfig\nkind: greeting\nkind_version: 1\nname: default\nconfig: [a]\n",
			"x.yaml: document 1 (line 5): config: want a mapping, got a list"},
		{"config name pattern", "type: providerconfig\nkind: greeting\nkind_version: 1\nname: EU_West\n",
			`x.yaml: document 1 (line 4): name: "EU_West" must be lower-case letters, digits, '.', '_' or '-', starting and ending with a letter or digit (e.g. web-1)`},
		{"config needs a name", "type: providerconfig\nkind: greeting\nkind_version: 1\n",
			"x.yaml: document 1 (line 1): name: must not be empty"},
		{"config needs a kind version", "type: providerconfig\nkind: greeting\nname: default\n",
			"x.yaml: document 1 (line 1): kind_version: must be at least 1 and at most 32767 (it is 0)"},
		{"config typo", "type: providerconfig\nkind: greeting\nkind_version: 1\nname: default\nconifg: {}\n",
			`x.yaml: document 1 (line 5): unknown field "conifg" (did you mean "config"?)`},
		{"unknown transition", strings.Replace(reactorBindingYAML, "degraded", "exploded", 1),
			`x.yaml: document 1 (line 4): transitions[1]: "exploded" is not one of created, synced, degraded, failed, deleted`},
		{"no transitions", strings.Replace(reactorBindingYAML, "[failed, degraded]", "[]", 1),
			"x.yaml: document 1 (line 4): transitions: must not be empty"},
		{"repeated transition", strings.Replace(reactorBindingYAML, "degraded", "failed", 1),
			"x.yaml: document 1 (line 4): transitions: must not repeat a value"},
		{"transitions must be a list", strings.Replace(reactorBindingYAML, "[failed, degraded]", "failed", 1),
			`x.yaml: document 1 (line 4): transitions: want a list, got "failed"`},
		{"binding needs a reactor version", strings.Replace(reactorBindingYAML, "reactor_kind_version: 1\n", "", 1),
			"x.yaml: document 1 (line 1): reactor_kind_version: must be at least 1 and at most 32767 (it is 0)"},
		{"disabled must be a boolean", reactorBindingYAML + "disabled: maybe\n",
			`x.yaml: document 1 (line 8): disabled: want true or false, got "maybe"`},
		{"resource provider config too long", resourceYAML + "provider_config: " + strings.Repeat("a", 64) + "\n",
			"x.yaml: document 1 (line 12): provider_config: must be at most 63 characters (it is 64)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := document.Parse("x.yaml", []byte(tc.data))
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}
			if err.Error() != tc.want {
				t.Fatalf("error:\n got: %s\nwant: %s", err, tc.want)
			}
			var de *document.Error
			if !errors.As(err, &de) {
				t.Fatalf("error %T does not hold a *document.Error", err)
			}
		})
	}
}

func TestParseObject(t *testing.T) {
	for _, tc := range []struct {
		name, source, data, want string
	}{
		{"inline JSON", "--input", `{"keys": 2, "dry_run": true}`, `{"dry_run":true,"keys":2}`},
		{"YAML file", "in.yaml", "keys: 2\nwhen: 2026-01-01\nlist: [a, {b: null}]\n", `{"keys":2,"list":["a",{"b":null}],"when":"2026-01-01"}`},
		{"JSON by its extension", "in.json", "\n\n{}", `{}`},
		{"YAML with a trailing empty document", "stdin", "a: 1\n---\n", `{"a":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := document.ParseObject(tc.source, []byte(tc.data))
			if err != nil {
				t.Fatalf("ParseObject: %v", err)
			}
			got, _ := protojson.Marshal(s)
			if compact(string(got)) != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestParseObjectErrors(t *testing.T) {
	for _, tc := range []struct {
		name, source, data, want string
	}{
		{"a list", "--input", `[1, 2]`, "--input: line 1: want a mapping, got a list"},
		{"a string", "in.yaml", "hello\n", `in.yaml: line 1: want a mapping, got "hello"`},
		{"empty YAML", "in.yaml", "# nothing\n", "in.yaml: line 1: empty: want a mapping"},
		{"empty JSON", "in.json", "  \n", "in.json: line 1: empty: want a mapping"},
		{"two JSON values", "--input", "{}\n{}", "--input: line 2: more than one value: want a single mapping"},
		{"two YAML documents", "in.yaml", "a: 1\n---\nb: 2\n", "in.yaml: line 3: more than one document: want a single mapping"},
		{"bad JSON", "--input", `{"a": }`, "--input: line 1: invalid JSON: invalid character '}' looking for beginning of value"},
		{"bad YAML", "in.yaml", "a: [\n", "in.yaml: line 1: invalid YAML: did not find expected node content"},
		{"infinity", "in.yaml", "a: .inf\n", "in.yaml: line 1: .inf is not a finite number (JSON has no NaN or infinity; quote it for a string)"},
		{"duplicate key", "--input", `{"a": 1, "a": 2}`, `--input: line 1: duplicate key "a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := document.ParseObject(tc.source, []byte(tc.data))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error:\n got: %v\nwant: %s", err, tc.want)
			}
		})
	}
}

func mustStruct(t *testing.T, js string) *structpb.Struct {
	t.Helper()
	s := new(structpb.Struct)
	if err := protojson.Unmarshal([]byte(js), s); err != nil {
		t.Fatal(err)
	}
	return s
}
