package stdio

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/convergehq/converge/sdk-go/converge"
)

func TestParseResponseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      []string
	}{
		{"garbage", "hello world", []string{"invalid character 'h' looking for beginning of value at byte 1 (line 1, column 1)", `stdout begins "hello world"`}},
		{"second line", "{\n  \"status\": {x}\n}", []string{"at byte 16 (line 2, column 14)"}},
		{"truncated", `{"status": {"a": 1}`, []string{"ends in the middle of a value"}},
		{"two objects", `{} {}`, []string{"more after its JSON object", "print exactly one object"}},
		{"unknown field", `{"stauts": {}}`, []string{`unknown field "stauts"`}},
		{"wrong type", `{"unhealthy": "yes"}`, []string{"unhealthy: want bool, got JSON string"}},
		{"status not object", `{"status": [1]}`, []string{"response.status: want a JSON object or null"}},
		{"output not object", `{"output": 3}`, []string{"response.output: want a JSON object or null"}},
		{"child spec", `{"children": [{"kind": "a", "version": 1, "name": "x", "spec": "s"}]}`, []string{"response.children[0].spec"}},
		{"protocol", `{"protocol": "converge.stdio/v9"}`, []string{`response.protocol: "converge.stdio/v9"`}},
		{"long garbage", strings.Repeat("é", 200), []string{"…"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseResponse([]byte(tc.out))
			if err == nil {
				t.Fatalf("ParseResponse(%q) succeeded", tc.out)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if !utf8.ValidString(err.Error()) {
				t.Errorf("error %q is not valid UTF-8", err)
			}
		})
	}
}

func TestEmptyResponse(t *testing.T) {
	for _, out := range []string{"", " \n\t", "{}", `{"protocol": "converge.stdio/v1"}`} {
		resp, err := ParseResponse([]byte(out))
		if err != nil {
			t.Fatalf("ParseResponse(%q): %v", out, err)
		}
		res, err := resp.Result("specChange", []string{"status"})
		if err != nil || res.Status != nil || res.Compose {
			t.Errorf("%q: result %+v, %v; want an empty leaf result", out, res, err)
		}
	}
}

func TestComposerResult(t *testing.T) {
	resp, err := ParseResponse([]byte(`{
		"status": {"accounts": 1},
		"children": [
			{"kind": "account", "version": 1, "name": "a-0", "labels": {"zone": "a"}, "spec": {"email": "x@y"}},
			{"kind": "vpc", "version": 2, "name": "v-0"}
		],
		"edges": [{"dependent": {"kind": "vpc", "name": "v-0"}, "dependency": {"kind": "account", "name": "a-0"},
			"flows": [{"from": "/account_id", "to": "/account_id"}, {"expr": "status.cidr", "to": "/cidr"}]}],
		"references": [{"namespace": "shared", "kind": "dns", "name": "root"}],
		"conditions": [{"type": "Composed", "status": "True", "reason": "Ok"}]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := resp.Result("specChange", []string{"children", "edges", "status"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Compose || len(res.Children) != 2 || res.Children[0].KindVersion != 1 || res.Children[1].Spec != nil {
		t.Errorf("children %+v", res.Children)
	}
	want := converge.DependsOn(converge.RefTo("vpc", "v-0"), converge.RefTo("account", "a-0"),
		converge.FlowFrom("/account_id", "/account_id"), converge.FlowExpr("status.cidr", "/cidr"))
	if got, _ := json.Marshal(res.Edges); string(got) != string(must(json.Marshal([]converge.Edge{want}))) {
		t.Errorf("edges %s", got)
	}
	if len(res.References) != 1 || res.References[0].Namespace != "shared" || len(res.Conditions) != 1 {
		t.Errorf("references %+v, conditions %+v", res.References, res.Conditions)
	}
}

func TestResultRefusesWhatTheReactionCannotReport(t *testing.T) {
	for _, tc := range []struct {
		name, out, trigger string
		emits              []string
		want               string
	}{
		{"composer without children", `{"status": {}}`, "specChange", []string{"children"}, `"children": [] prunes every child`},
		{"leaf with children", `{"children": []}`, "specChange", []string{"status"}, "does not emit children"},
		{"leaf with edges", `{"edges": [{"dependent": {"kind": "a", "name": "b"}, "dependency": {"kind": "a", "name": "c"}}]}`, "specChange", []string{"status"}, "edges and references come with children"},
		{"output from a leaf", `{"output": {}}`, "specChange", []string{"status"}, "only an operation reaction reports output"},
		{"reactor with status", `{"status": {"x": 1}}`, "reactor", []string{"sideEffect"}, "response.status: a reactor reports nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := ParseResponse([]byte(tc.out))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := resp.Result(tc.trigger, tc.emits); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Result: %v; want an error containing %q", err, tc.want)
			}
		})
	}
	resp, _ := ParseResponse([]byte(`{"output": {"restarted": 3}, "status": null}`))
	res, err := resp.Result("operation", []string{"operationOutput"})
	if err != nil || string(res.Output.(json.RawMessage)) != `{"restarted": 3}` || res.Status != nil {
		t.Errorf("operation result %+v, %v", res, err)
	}
	resp, _ = ParseResponse(nil)
	if res, err := resp.Result("reactor", []string{"sideEffect"}); res != nil || err != nil {
		t.Errorf("reactor result %+v, %v; want nil, nil", res, err)
	}
}

func FuzzParseResponse(f *testing.F) {
	for _, seed := range []string{
		"", "{}", `{"status": {"a": [1, 2, {"b": null}]}}`, "garbage", `{"children": [{"kind": "a"}]}`,
		`{"edges": [{"flows": [{"to": "/x"}]}]}`, "\xff\xfe", `{"status": 1e999}`, strings.Repeat("[", 20000),
		`{"conditions": [{"type": "A", "status": "True"}], "unhealthy": true, "output": {}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		resp, err := ParseResponse(out)
		if err != nil {
			if !utf8.ValidString(err.Error()) {
				t.Fatalf("error %q is not valid UTF-8", err)
			}
			return
		}
		for _, trigger := range []string{"specChange", "reactor", "operation"} {
			for _, emits := range [][]string{{"status"}, {"children", "edges"}, {"sideEffect"}} {
				_, _ = resp.Result(trigger, emits)
			}
		}
	})
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
