package flow

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/convergehq/converge/server/internal/schema"
)

func write(t testing.TB, ptr string, v any) Write {
	t.Helper()
	return Write{To: mustParse(t, ptr), Value: v}
}

func TestApply(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		writes  []Write
		want    string
		changed bool
	}{
		{
			name:   "no writes",
			spec:   `{"a": 1}`,
			want:   `{"a": 1}`,
			writes: nil,
		},
		{
			name:   "same string",
			spec:   `{"id": "acct-1"}`,
			writes: []Write{write(t, "/id", "acct-1")},
			want:   `{"id": "acct-1"}`,
		},
		{
			name:   "numbers equal as JSON",
			spec:   `{"a": 1, "b": 1.5, "c": 100}`,
			writes: []Write{write(t, "/a", 1.0), write(t, "/b", json.Number("15e-1")), write(t, "/c", json.Number("1E2"))},
			want:   `{"a": 1, "b": 1.5, "c": 100}`,
		},
		{
			name:   "equal object",
			spec:   `{"net": {"cidr": "10.0.0.0/16", "zones": ["a", "b"]}}`,
			writes: []Write{write(t, "/net", decode(t, `{"zones": ["a", "b"], "cidr": "10.0.0.0/16"}`))},
			want:   `{"net": {"cidr": "10.0.0.0/16", "zones": ["a", "b"]}}`,
		},
		{
			name:    "new value",
			spec:    `{"id": "acct-1"}`,
			writes:  []Write{write(t, "/id", "acct-2")},
			want:    `{"id": "acct-2"}`,
			changed: true,
		},
		{
			name:    "new key",
			spec:    `{}`,
			writes:  []Write{write(t, "/vpc/account_id", "acct-1")},
			want:    `{"vpc": {"account_id": "acct-1"}}`,
			changed: true,
		},
		{
			name:    "null is a value",
			spec:    `{}`,
			writes:  []Write{write(t, "/a", nil)},
			want:    `{"a": null}`,
			changed: true,
		},
		{
			name:    "number differs only past float64 precision",
			spec:    `{"n": 9007199254740993}`,
			writes:  []Write{write(t, "/n", json.Number("9007199254740992"))},
			want:    `{"n": 9007199254740992}`,
			changed: true,
		},
		{
			name:    "one of two changes",
			spec:    `{"a": 1, "b": 2}`,
			writes:  []Write{write(t, "/a", json.Number("1")), write(t, "/b", json.Number("3"))},
			want:    `{"a": 1, "b": 3}`,
			changed: true,
		},
		{
			name:   "a later write undoes an earlier one",
			spec:   `{"a": 1}`,
			writes: []Write{write(t, "/a", json.Number("2")), write(t, "/a", json.Number("1"))},
			want:   `{"a": 1}`,
		},
		{
			name:    "append always changes",
			spec:    `{"l": [1]}`,
			writes:  []Write{write(t, "/l/-", json.Number("1"))},
			want:    `{"l": [1, 1]}`,
			changed: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := decode(t, tt.spec)
			before := copyJSON(spec)
			got, changed, err := Apply(spec, tt.writes)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if changed != tt.changed {
				t.Errorf("changed = %v, want %v", changed, tt.changed)
			}
			if !schema.EqualJSON(got, decode(t, tt.want)) {
				t.Errorf("Apply = %#v, want %s", got, tt.want)
			}
			if !reflect.DeepEqual(spec, before) {
				t.Errorf("Apply changed its input to %#v", spec)
			}
			if !changed && reflect.ValueOf(got).UnsafePointer() != reflect.ValueOf(spec).UnsafePointer() {
				t.Error("an unchanged spec was copied; want the input returned as is")
			}
		})
	}
}

func TestApplyError(t *testing.T) {
	spec := decode(t, `{"name": "web", "a": 1}`)
	before := copyJSON(spec)
	got, changed, err := Apply(spec, []Write{write(t, "/a", json.Number("2")), write(t, "/name/first", "x")})
	if err == nil || !strings.Contains(err.Error(), `pointer "/name/first": cannot step into /name: it is a string`) {
		t.Fatalf("Apply error = %v, want one naming the pointer and step", err)
	}
	if changed || !reflect.DeepEqual(got, before) || !reflect.DeepEqual(spec, before) {
		t.Errorf("a failed Apply returned %v, changed=%v and left the input as %v; want the input, unchanged", got, changed, spec)
	}
}
