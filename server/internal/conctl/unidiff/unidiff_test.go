package unidiff

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestUnified(t *testing.T) {
	for _, tc := range []struct {
		name, a, b string
		context    int
		want       string
	}{
		{"equal", "a\nb\n", "a\nb\n", 3, ""},
		{"both empty", "", "", 3, ""},
		{"from nothing", "", "greeting: Hello\nreplicas: 3\n", 3, "" +
			"--- old\n+++ new\n" +
			"@@ -0,0 +1,2 @@\n" +
			"+greeting: Hello\n" +
			"+replicas: 3\n"},
		{"to nothing", "a\n", "", 3, "" +
			"--- old\n+++ new\n" +
			"@@ -1 +0,0 @@\n" +
			"-a\n"},
		{"one line changed in the middle", "a\nb\nc\nd\ne\nf\ng\nh\ni\n", "a\nb\nc\nd\nE\nf\ng\nh\ni\n", 3, "" +
			"--- old\n+++ new\n" +
			"@@ -2,7 +2,7 @@\n" +
			" b\n c\n d\n" +
			"-e\n" +
			"+E\n" +
			" f\n g\n h\n"},
		{"far apart changes make two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "one\n2\n3\n4\n5\n6\n7\n8\n9\nten\n", 2, "" +
			"--- old\n+++ new\n" +
			"@@ -1,3 +1,3 @@\n" +
			"-1\n+one\n 2\n 3\n" +
			"@@ -8,3 +8,3 @@\n" +
			" 8\n 9\n-10\n+ten\n"},
		{"near changes share a hunk", "1\n2\n3\n4\n5\n6\n", "one\n2\n3\n4\n5\nsix\n", 2, "" +
			"--- old\n+++ new\n" +
			"@@ -1,6 +1,6 @@\n" +
			"-1\n+one\n 2\n 3\n 4\n 5\n-6\n+six\n"},
		{"insertion keeps its place", "a\nb\nc\n", "a\nb\nnew\nc\n", 1, "" +
			"--- old\n+++ new\n" +
			"@@ -2,2 +2,3 @@\n" +
			" b\n+new\n c\n"},
		{"pure insertion without context", "a\nb\n", "a\nx\nb\n", 0, "" +
			"--- old\n+++ new\n" +
			"@@ -1,0 +2 @@\n" +
			"+x\n"},
		{"missing final newline is not a change", "a\nb", "a\nb\n", 3, ""},
		{"YAML spec", "greeting: Hello\nports:\n  - 80\n  - 443\nreplicas: 3\n", "greeting: Hello\nports:\n  - 443\nreplicas: 5\n", 3, "" +
			"--- old\n+++ new\n" +
			"@@ -1,5 +1,4 @@\n" +
			" greeting: Hello\n ports:\n-  - 80\n   - 443\n-replicas: 3\n+replicas: 5\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Unified("old", "new", tc.a, tc.b, tc.context)
			if got != tc.want {
				t.Fatalf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestScriptsAreShortestAndCorrect checks on random inputs that a script
// turns a into b and has as few insertions and deletions as an LCS allows.
func TestScriptsAreShortestAndCorrect(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"a", "b", "c", "d"}
	randomLines := func() []string {
		out := make([]string, rng.IntN(12))
		for i := range out {
			out[i] = words[rng.IntN(len(words))]
		}
		return out
	}
	for i := 0; i < 2000; i++ {
		a, b := randomLines(), randomLines()
		script := diffLines(a, b)
		var gotA, gotB []string
		changes := 0
		for _, e := range script {
			if e.op != insert {
				gotA = append(gotA, e.text)
			}
			if e.op != del {
				gotB = append(gotB, e.text)
			}
			if e.op != equal {
				changes++
			}
		}
		if strings.Join(gotA, ",") != strings.Join(a, ",") || strings.Join(gotB, ",") != strings.Join(b, ",") {
			t.Fatalf("script %v does not turn %v into %v", script, a, b)
		}
		if want := len(a) + len(b) - 2*lcs(a, b); changes != want {
			t.Fatalf("%v -> %v: %d changes, want %d", a, b, changes, want)
		}
	}
}

func lcs(a, b []string) int {
	row := make([]int, len(b)+1)
	for i := range a {
		prev := 0
		for j := range b {
			cur := row[j+1]
			if a[i] == b[j] {
				row[j+1] = prev + 1
			} else {
				row[j+1] = max(row[j+1], row[j])
			}
			prev = cur
		}
	}
	return row[len(b)]
}

// TestLargeUnrelatedInputsStayBounded: two long texts with nothing in
// common exceed the search bound and are shown as replaced outright.
func TestLargeUnrelatedInputsStayBounded(t *testing.T) {
	var a, b strings.Builder
	for i := range 5000 {
		a.WriteString("a" + strings.Repeat("x", i%7) + "\n")
		b.WriteString("b" + strings.Repeat("y", i%5) + "\n")
	}
	got := Unified("old", "new", a.String(), b.String(), 3)
	if !strings.HasPrefix(got, "--- old\n+++ new\n@@ -1,5000 +1,5000 @@\n-a\n") {
		t.Fatalf("diff starts:\n%s", got[:min(len(got), 200)])
	}
	if n := strings.Count(got, "\n-"); n != 5000 {
		t.Fatalf("%d deleted lines, want 5000", n)
	}
}

func FuzzUnified(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nc\nd\n", 3)
	f.Add("", "x\n", 0)
	f.Add("x\ny", "y\nx", -1)
	f.Fuzz(func(t *testing.T, a, b string, context int) {
		got := Unified("a", "b", a, b, context%10)
		if (got == "") != slices.Equal(splitLines(a), splitLines(b)) {
			t.Fatalf("Unified(%q, %q) = %q", a, b, got)
		}
		if got == "" {
			return
		}
		patched, err := patch(splitLines(a), got)
		if err != nil || !slices.Equal(patched, splitLines(b)) {
			t.Fatalf("Unified(%q, %q) = %q does not patch a into b (got %q, %v)", a, b, got, patched, err)
		}
	})
}

// patch applies a unified diff to a, checking every hunk's header and
// context against a.
func patch(a []string, diff string) ([]string, error) {
	lines := splitLines(diff)
	if len(lines) < 2 || lines[0] != "--- a" || lines[1] != "+++ b" {
		return nil, fmt.Errorf("bad headers %q", lines[:min(2, len(lines))])
	}
	var out []string
	next := 0 // the first line of a not yet copied
	for i := 2; i < len(lines); {
		var aStart, aCount, bStart, bCount int
		if _, err := fmt.Sscanf(normalize(lines[i]), "@@ -%d,%d +%d,%d @@", &aStart, &aCount, &bStart, &bCount); err != nil {
			return nil, fmt.Errorf("hunk header %q: %v", lines[i], err)
		}
		from := aStart - 1
		if aCount == 0 {
			from = aStart
		}
		if from < next || from > len(a) {
			return nil, fmt.Errorf("hunk %q out of order", lines[i])
		}
		out = append(out, a[next:from]...)
		next = from
		if want := len(out) + 1; (bCount > 0 && bStart != want) || (bCount == 0 && bStart != want-1) {
			return nil, fmt.Errorf("hunk %q: new start %d, want %d", lines[i], bStart, want)
		}
		i++
		seenA, seenB := 0, 0
		for ; i < len(lines) && !strings.HasPrefix(lines[i], "@@"); i++ {
			op, text := lines[i][0], lines[i][1:]
			if op != '+' {
				if next >= len(a) || a[next] != text {
					return nil, fmt.Errorf("line %q does not match a", lines[i])
				}
				next++
				seenA++
			}
			if op != '-' {
				out = append(out, text)
				seenB++
			}
		}
		if seenA != aCount || seenB != bCount {
			return nil, fmt.Errorf("hunk counts %d,%d, lines %d,%d", aCount, bCount, seenA, seenB)
		}
	}
	return append(out, a[next:]...), nil
}

// normalize writes the counts diff -u leaves out (a count of 1).
func normalize(header string) string {
	parts := strings.Fields(header) // @@ -s[,c] +s[,c] @@
	for i := 1; i <= 2 && i < len(parts); i++ {
		if !strings.Contains(parts[i], ",") {
			parts[i] += ",1"
		}
	}
	return strings.Join(parts, " ")
}
