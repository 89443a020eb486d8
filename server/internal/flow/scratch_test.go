package flow

import (
	"encoding/json"
	"fmt"
	"testing"
)

func TestScratch(t *testing.T) {
	big := make([]any, 400000)
	for i := range big {
		big[i] = json.Number("1")
	}
	status := map[string]any{"n": json.Number("42"), "a": "str", "vpc": map[string]any{}, "items": []any{map[string]any{"name": "x"}, map[string]any{}}, "big": big, "z": nil}
	for _, c := range [][3]string{
		{"/n", "", "/x"},
		{"/vpc/id", "", "/x"},
		{"/a/b", "", "/x"},
		{"/z/b", "", "/x"},
		{"", "status.n + 1", "/x"},
		{"", "status.vpc.id", "/x"},
		{"", "status.a.b", "/x"},
		{"", "status.z.b", "/x"},
		{"", "status.items[5]", "/x"},
		{"", "status.items[0].id", "/x"},
		{"", "status.items.map(x, x.name)", "/x"},
		{"", "status.items.map(status, status.name)", "/x"},
		{"", "1 / (status.n - 42)", "/x"},
		{"", "status.n + 'x'", "/x"},
		{"", "0.0/0.0", "/x"},
		{"", "{'a': b'x'}", "/x"},
		{"", "{1: 'x'}", "/x"},
		{"", "duration('90s')", "/x"},
		{"", "timestamp('2024-01-02T03:04:05Z')", "/x"},
		{"", "status.?q", "/x"},
		{"", "status.big.map(x, x + 1)", "/x"},
		{"", "lists.range(1000000).map(x, x)", "/x"},
		{"", "lists.range(100000).map(x, x)", "/x"},
		{"", "status.items.map(x, status.items.map(y, y))", "/x"},
		{"", "status.a.split('').map(x, status.a)", "/x"},
		{"", "status.a + status.a", "/x"},
		{"", "[1,2,3].map(x, [1,2,3].map(y, x*y))", "/x"},
		{"", "stauts.x +\n  foo(1)", "/x"},
		{"", "status.a +", "/x"},
		{"", "status[1]", "/x"},
		{"", "spec.name + '-vpc'", "/x"},
		{"", "double(status.n) * 1.5", "/x"},
	} {
		p, err := Compile(c[0], c[1], c[2])
		if err != nil {
			fmt.Printf("%q %q: COMPILE %v\n", c[0], c[1], err)
			continue
		}
		v, err := p.Eval(status, nil)
		fmt.Printf("%q %q: %#v  err=%v (%T)\n", c[0], c[1], trunc(v), err, err)
	}
}

func trunc(v any) any {
	if l, ok := v.([]any); ok && len(l) > 5 {
		return fmt.Sprintf("list of %d", len(l))
	}
	return v
}
