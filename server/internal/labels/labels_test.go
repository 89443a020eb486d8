package labels

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := map[string]Selector{
		"":               nil,
		"a=b":            {{Key: "a", Op: Equals, Values: []string{"b"}}},
		"a==b, c!=d":     {{Key: "a", Op: Equals, Values: []string{"b"}}, {Key: "c", Op: NotEquals, Values: []string{"d"}}},
		"team,!legacy":   {{Key: "team", Op: Exists}, {Key: "legacy", Op: NotExists}},
		"env in (a, b)":  {{Key: "env", Op: In, Values: []string{"a", "b"}}},
		"env notin (x)":  {{Key: "env", Op: NotIn, Values: []string{"x"}}},
		"domain in (a)":  {{Key: "domain", Op: In, Values: []string{"a"}}},
		"missing in(x)":  {{Key: "missing", Op: In, Values: []string{"x"}}},
		"inn notin (y)":  {{Key: "inn", Op: NotIn, Values: []string{"y"}}},
		"app.io/tier=db": {{Key: "app.io/tier", Op: Equals, Values: []string{"db"}}},
		"a=":             {{Key: "a", Op: Equals, Values: []string{""}}},
	}
	for in, want := range cases {
		got, err := Parse(in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Parse(%q) = %+v, want %+v", in, got, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"=b", "a in b", "a in ()", "a in (b", "a)", "!", "a in ((b))", "x y=z"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) succeeded; want an error", in)
		}
	}
}

// TestParseRefusals: each refusal names the term and the rule it breaks.
func TestParseRefusals(t *testing.T) {
	for in, want := range map[string]string{
		"a,,b":           "term 2 of 3 is empty",
		"a,":             "term 2 of 2 is empty",
		",a":             "term 1 of 2 is empty",
		"é=1":            `label selector term "é=1": label key "é" must be letters, digits, '.', '_', '/' or '-', starting and ending with a letter or digit`,
		"a=b=c":          `label selector term "a=b=c": one '=' (or '==' or '!=') per term: value "b=c" cannot contain '='`,
		"a==b=c":         `value "b=c" cannot contain '='`,
		"a!=b=c":         `value "b=c" cannot contain '='`,
		"a=!b":           `label selector term "a=!b": label value "!b" cannot contain any of = ! , ( )`,
		"-a=b":           `label key "-a" must be`,
		"a in (x,,y)":    `label selector term "a in (x,,y)": empty value in the list`,
		"a in (x, !y)":   `label value "!y" cannot contain`,
		"!bad key":       `label key "bad key" must be`,
		"a=" + long(254): "label value is 254 characters; the limit is 253",
		long(254) + "=a": "label key is 254 characters; the limit is 253",
	} {
		_, err := Parse(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%.40q) = %v; want an error containing %q", in, err, want)
		}
	}
	// Values may hold what label values hold, less the syntax characters.
	for _, in := range []string{"team=web app", "name=héllo", "a in (x y, z)", "  ", "a.b/c-d_e=1"} {
		if _, err := Parse(in); err != nil {
			t.Errorf("Parse(%q): %v", in, err)
		}
	}
}

func long(n int) string { return strings.Repeat("k", n) }

// TestKeyForm keeps keyForm, the words of the key rule, true to the pattern
// read from the proto.
func TestKeyForm(t *testing.T) {
	for k, ok := range map[string]bool{"a": true, "A.b_c/d-9": true, "9": true, "a-": false, "-a": false, "_a": false,
		"a b": false, "é": false, "a:b": false, "a/": false} {
		if got := keyRule.key.MatchString(k); got != ok {
			t.Errorf("key %q: matches %v, want %v (keyForm: %s)", k, got, ok, keyForm)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"a=b", "a in (x,y)", "!a,b!=c", "((", "a notin(b)"} {
		f.Add(s)
	}
	for _, s := range []string{"a,,b", "é=1", "a=b=c", "a in (x,,y)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := Parse(s)
		if err != nil {
			return
		}
		for _, term := range sel {
			if checkKey(term.Key) != nil {
				t.Fatalf("Parse(%q) gave the key %q, which apply refuses", s, term.Key)
			}
			for _, v := range term.Values {
				if checkValue(v) != nil || strings.TrimSpace(v) != v {
					t.Fatalf("Parse(%q) gave the value %q", s, v)
				}
			}
		}
	})
}
