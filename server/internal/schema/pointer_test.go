package schema

import (
	"slices"
	"strings"
	"testing"
)

func TestJoinPointer(t *testing.T) {
	tests := []struct {
		ptr    string
		tokens []string
		want   string
	}{
		{"", nil, ""},
		{"", []string{""}, "/"},
		{"/a", []string{"b/c", "0"}, "/a/b~1c/0"},
		{"", []string{"~/", "~1"}, "/~0~1/~01"},
	}
	for _, tt := range tests {
		if got := JoinPointer(tt.ptr, tt.tokens...); got != tt.want {
			t.Errorf("JoinPointer(%q, %q) = %q, want %q", tt.ptr, tt.tokens, got, tt.want)
		}
	}
}

func TestUnescapeToken(t *testing.T) {
	tests := []struct {
		in   string
		want string
		bad  int
	}{
		{"", "", -1},
		{"plain", "plain", -1},
		{"m~0n", "m~n", -1},
		{"a~1b", "a/b", -1},
		{"~01", "~1", -1},
		{"~10", "/0", -1},
		{"~2", "~2", 0},
		{"a~", "a~", 1},
		{"~~1", "~/", 0},
		{"x~0~3~", "x~~3~", 3},
	}
	for _, tt := range tests {
		got, bad := UnescapeToken(tt.in)
		if got != tt.want || bad != tt.bad {
			t.Errorf("UnescapeToken(%q) = %q, %d; want %q, %d", tt.in, got, bad, tt.want, tt.bad)
		}
	}
}

// TestUnescapeTokenEveryShort checks every token of up to six characters
// from the escape alphabet: EscapeToken round-trips, and a token with a
// stray "~" reads as decoding "~1" then "~0" everywhere (RFC 6901 §4).
func TestUnescapeTokenEveryShort(t *testing.T) {
	const alphabet = "~01/a"
	tokens := []string{""}
	for n := 0; n < 6; n++ {
		for _, tok := range tokens[len(tokens)-pow(len(alphabet), n):] {
			for i := range len(alphabet) {
				tokens = append(tokens, tok+alphabet[i:i+1])
			}
		}
	}
	for _, tok := range tokens {
		if got, bad := UnescapeToken(EscapeToken(tok)); got != tok || bad != -1 {
			t.Fatalf("UnescapeToken(EscapeToken(%q)) = %q, %d", tok, got, bad)
		}
		if strings.Contains(tok, "/") {
			continue
		}
		want := strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if got, _ := UnescapeToken(tok); got != want {
			t.Fatalf("UnescapeToken(%q) = %q, want %q", tok, got, want)
		}
	}
}

func pow(b, n int) int {
	p := 1
	for range n {
		p *= b
	}
	return p
}

func TestComparePointers(t *testing.T) {
	sorted := []string{
		"",
		"/a",
		"/a/0",
		"/a/01",
		"/a/1",
		"/a/2",
		"/a/10",
		"/a/99999999999999999999",
		"/a/100000000000000000000",
		"/a/b",
		"/a/b/c",
		"/b",
	}
	for i, a := range sorted {
		for j, b := range sorted {
			got := ComparePointers(a, b)
			if (got < 0) != (i < j) || (got == 0) != (i == j) {
				t.Errorf("ComparePointers(%q, %q) = %d; want the order of %q", a, b, got, sorted)
			}
		}
	}
	shuffled := slices.Clone(sorted)
	slices.Reverse(shuffled)
	slices.SortFunc(shuffled, ComparePointers)
	if !slices.Equal(shuffled, sorted) {
		t.Errorf("sorted with ComparePointers: %q, want %q", shuffled, sorted)
	}
}

func TestValueAt(t *testing.T) {
	doc := mustDecode(t, `{"a": {"b/c": [10, null, {"~": true}]}, "": 1}`)
	tests := []struct {
		ptr  string
		want string
		ok   bool
	}{
		{"/a/b~1c/0", "10", true},
		{"/a/b~1c/1", "null", true},
		{"/a/b~1c/2/~0", "true", true},
		{"/", "1", true},
		{"/a/b~1c/3", "", false},
		{"/a/b~1c/-1", "", false},
		{"/a/b~1c/x", "", false},
		{"/a/missing", "", false},
		{"/a/b~1c/0/deeper", "", false},
		{"a", "", false},
	}
	for _, tt := range tests {
		got, ok := ValueAt(doc, tt.ptr)
		if ok != tt.ok || ok && !EqualJSON(got, mustDecode(t, tt.want)) {
			t.Errorf("ValueAt(%q) = %v, %v; want %s, %v", tt.ptr, got, ok, tt.want, tt.ok)
		}
	}
	if got, ok := ValueAt(doc, ""); !ok || !EqualJSON(got, doc) {
		t.Errorf("ValueAt(\"\") = %v, %v; want the document", got, ok)
	}
}
