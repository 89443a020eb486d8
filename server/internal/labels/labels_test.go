package labels

import (
	"reflect"
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

func FuzzParse(f *testing.F) {
	for _, s := range []string{"a=b", "a in (x,y)", "!a,b!=c", "((", "a notin(b)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := Parse(s)
		if err != nil {
			return
		}
		for _, term := range sel {
			if term.Key == "" {
				t.Fatalf("Parse(%q) gave an empty key", s)
			}
		}
	})
}
