// Package unidiff compares two texts line by line and writes the
// difference as a unified diff, the format of "diff -u" and "git diff".
//
// The edit script is a shortest one (Myers' algorithm) after the common
// head and tail are set aside. Past maxEdits differing lines it stops
// searching and shows the rest of the middle as replaced outright, so
// time and memory stay bounded on inputs that share little.
package unidiff

import (
	"fmt"
	"strings"
)

// maxEdits bounds the search for a shortest script. The search costs time
// proportional to (lines × edits) and memory to edits², so this keeps a
// pathological pair of specs to a few megabytes.
const maxEdits = 1000

// op is what one line of a script does.
type op byte

const (
	equal  op = ' '
	del    op = '-'
	insert op = '+'
)

type edit struct {
	op   op
	text string
}

// Unified returns the unified diff that turns text a into text b, with
// context unchanged lines around each change, under the headers
// "--- fromName" and "+++ toName". It returns "" when the texts have the
// same lines. A missing newline at the end of a text is not reported.
func Unified(fromName, toName, a, b string, context int) string {
	script := diffLines(splitLines(a), splitLines(b))
	hunks := group(script, max(context, 0))
	if len(hunks) == 0 {
		return ""
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", fromName, toName)
	for _, h := range hunks {
		h.write(&out)
	}
	return out.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// diffLines returns a script of equal, deleted and inserted lines that
// turns a into b.
func diffLines(a, b []string) []edit {
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	script := make([]edit, 0, len(a)+len(b))
	for _, l := range a[:head] {
		script = append(script, edit{equal, l})
	}
	script = append(script, middle(a[head:len(a)-tail], b[head:len(b)-tail])...)
	for _, l := range a[len(a)-tail:] {
		script = append(script, edit{equal, l})
	}
	return script
}

// middle diffs what lies between the common head and tail.
func middle(a, b []string) []edit {
	if script, ok := myers(a, b, maxEdits); ok {
		return script
	}
	script := make([]edit, 0, len(a)+len(b))
	for _, l := range a {
		script = append(script, edit{del, l})
	}
	for _, l := range b {
		script = append(script, edit{insert, l})
	}
	return script
}

// frontier is the furthest x reached on each diagonal k = x - y, for k in
// [lo, lo+len(x)).
type frontier struct {
	lo int
	x  []int
}

func (f frontier) at(k int) int { return f.x[k-f.lo] }

// myers finds a shortest script of at most limit insertions and deletions,
// or reports that there is none.
func myers(a, b []string, limit int) ([]edit, bool) {
	n, m := len(a), len(b)
	bound := min(n+m, limit)
	// v holds the frontier for diagonals -bound-1 .. bound+1.
	off := bound + 1
	v := make([]int, 2*bound+3)
	var trace []frontier
	for d := 0; d <= bound; d++ {
		// Keep the frontier as it was before step d: the backtrack needs it.
		trace = append(trace, frontier{lo: -d - 1, x: append([]int(nil), v[off-d-1:off+d+2]...)})
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // down: an insertion
			} else {
				x = v[off+k-1] + 1 // right: a deletion
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(a, b, trace), true
			}
		}
	}
	return nil, false
}

// backtrack walks the trace from the end of both inputs to their start.
func backtrack(a, b []string, trace []frontier) []edit {
	x, y := len(a), len(b)
	var rev []edit
	for d := len(trace) - 1; d >= 0; d-- {
		v := trace[d]
		k := x - y
		prevK := k - 1
		if k == -d || (k != d && v.at(k-1) < v.at(k+1)) {
			prevK = k + 1
		}
		prevX := v.at(prevK)
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			rev = append(rev, edit{equal, a[x-1]})
			x, y = x-1, y-1
		}
		if d == 0 {
			break
		}
		if x == prevX {
			rev = append(rev, edit{insert, b[y-1]})
		} else {
			rev = append(rev, edit{del, a[x-1]})
		}
		x, y = prevX, prevY
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}
