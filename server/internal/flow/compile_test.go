package flow

import (
	"errors"
	"strings"
	"testing"
)

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name           string
		from, expr, to string
		want           []string // Problem.String() of each problem
	}{
		{
			name: "no source",
			to:   "/a",
			want: []string{"from: a flow needs a source: set from (a JSON pointer into the dependency's status) or expr (a CEL expression)"},
		},
		{
			name: "two sources",
			from: "/a", expr: "status.a", to: "/a",
			want: []string{"expr: set from or expr, not both"},
		},
		{
			name: "bad from",
			from: "account_id", to: "/a",
			want: []string{`from: pointer "account_id" must start with "/" (or be "" for the whole document)`},
		},
		{
			name: "no target",
			from: "/a",
			want: []string{`to: must point into the spec, e.g. "/account_id"; "" would replace the whole spec`},
		},
		{
			name: "bad target",
			from: "/a", to: "/x~9",
			want: []string{`to: pointer "/x~9": "~9" at byte 2 is not an escape; write "~0" for "~" and "~1" for "/"`},
		},
		{
			name: "appending target",
			from: "/a", to: "/subnets/-",
			want: []string{`to: pointer "/subnets/-" appends with "-", so every sync would add another element; point at an index or a key`},
		},
		{
			name: "every problem is reported",
			from: "a", to: "b",
			want: []string{
				`from: pointer "a" must start with "/" (or be "" for the whole document)`,
				`to: pointer "b" must start with "/" (or be "" for the whole document)`,
			},
		},
		{
			name: "undeclared variable",
			expr: "stauts.cidr", to: "/a",
			want: []string{"expr:1:1: undeclared reference to 'stauts' (in container '')"},
		},
		{
			name: "positions on later lines",
			expr: "status.cidr +\n  cidrSuffix(24)", to: "/a",
			want: []string{"expr:2:13: undeclared reference to 'cidrSuffix' (in container '')"},
		},
		{
			name: "syntax error",
			expr: `status.cidr + "/24`, to: "/a",
			want: []string{`expr:1:15: Syntax error: token recognition error at: '"/24'`, "expr:1:19: Syntax error: mismatched input '<EOF>'"},
		},
		{
			name: "type error",
			expr: "status[0]", to: "/a",
			want: []string{"expr:1:7: found no matching overload for '_[_]' applied to '(map(string, dyn), int)'"},
		},
		{
			name: "bytes result",
			expr: `b"abc"`, to: "/a",
			want: []string{"expr: the result is bytes, which JSON cannot hold; convert with base64.encode(...) or string(...)"},
		},
		{
			name: "type result",
			expr: `type(status)`, to: "/a",
			want: []string{"expr: the result is a type, which JSON cannot hold; convert with string(...)"},
		},
		{
			name: "too costly whatever the input",
			expr: `lists.range(1000).map(x, lists.range(1000).map(y, x * y))`, to: "/a",
			want: []string{"expr: costs at least"},
		},
		{
			name: "expression and target",
			expr: "status.", to: "x",
			want: []string{"expr:1:8: Syntax error", `to: pointer "x" must start with "/"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compile(tt.from, tt.expr, tt.to)
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("Compile = %v, %v; want a *CompileError", p, err)
			}
			if len(ce.Problems) != len(tt.want) {
				t.Fatalf("Compile problems:\n%v\nwant %d problems like %q", err, len(tt.want), tt.want)
			}
			for i, want := range tt.want {
				if got := ce.Problems[i].String(); !strings.HasPrefix(got, want) {
					t.Errorf("problem %d = %q, want it to start with %q", i, got, want)
				}
			}
			if err.Error() != joinProblems(ce.Problems) {
				t.Errorf("Error() = %q, want the problems one per line", err.Error())
			}
		})
	}
}

func joinProblems(ps []Problem) string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

func TestCompileProblemFields(t *testing.T) {
	_, err := Compile("", "status.a +\n  nope", "/a")
	var ce *CompileError
	if !errors.As(err, &ce) || len(ce.Problems) != 1 {
		t.Fatalf("Compile error = %v, want one problem", err)
	}
	if got := ce.Problems[0]; got.Field != "expr" || got.Line != 2 || got.Column != 3 {
		t.Errorf("problem = %+v, want field expr at 2:3", got)
	}
}

func TestCompileExprTooLong(t *testing.T) {
	expr := "status.a + " + strings.Repeat(`"x" + `, 700) + `"y"`
	_, err := Compile("", expr, "/a")
	if err == nil || !strings.Contains(err.Error(), "4096") || !strings.HasPrefix(err.Error(), "expr") {
		t.Errorf("Compile of a %d-character expression = %v; want an expr problem naming the limit", len(expr), err)
	}
}

func TestCompileAccepts(t *testing.T) {
	flows := [][3]string{
		{"/account_id", "", "/account_id"},
		{"/", "", "/a/b/0"},
		{"/a~1b", "", "/c~0d"},
		{"", `status.cidr + "/24"`, "/cidr"},
		{"", `has(status.zone) ? status.zone : "us-east-1a"`, "/zone"},
		{"", `status.?zone.orValue("us-east-1a")`, "/zone"},
		{"", `status.subnets.map(s, s.zone + "/" + s.id)`, "/subnets"},
		{"", `status.subnets.filter(s, s.public).map(s, s.id).join(",")`, "/ids"},
		{"", `{"name": spec.name + "-vpc", "tags": spec.tags}`, "/vpc"},
		{"", `base64.encode(bytes(status.cert))`, "/cert"},
		{"", `timestamp(status.created) + duration("1h")`, "/expires"},
		{"", "status.count +\n 1", "/count"},
		{"", `math.greatest(status.a, status.b)`, "/max"},
		{"", `status.tags.map(k, k + "=" + status.tags[k]).sort()`, "/labels"},
		{"", `sets.contains(status.zones, ["a"])`, "/has_a"},
	}
	for _, f := range flows {
		p, err := Compile(f[0], f[1], f[2])
		if err != nil {
			t.Errorf("Compile(%q, %q, %q): %v", f[0], f[1], f[2], err)
			continue
		}
		if p.To().String() != f[2] {
			t.Errorf("To() = %q, want %q", p.To(), f[2])
		}
	}
}
