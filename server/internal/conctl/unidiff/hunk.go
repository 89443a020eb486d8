package unidiff

import (
	"fmt"
	"strings"
)

// hunk is a run of the script with its place in both texts (0-based).
type hunk struct {
	aStart, bStart int
	lines          []edit
}

// group cuts a script into hunks: each change with up to context equal
// lines around it, changes closer than 2×context merged into one hunk.
func group(script []edit, context int) []hunk {
	var hunks []hunk
	aLine, bLine := make([]int, len(script)+1), make([]int, len(script)+1)
	for i, e := range script {
		aLine[i+1], bLine[i+1] = aLine[i], bLine[i]
		if e.op != insert {
			aLine[i+1]++
		}
		if e.op != del {
			bLine[i+1]++
		}
	}
	for i := 0; i < len(script); {
		if script[i].op == equal {
			i++
			continue
		}
		start := max(0, i-context)
		last := i // the last change in this hunk
		for j := i + 1; j < len(script) && j <= last+2*context+1; j++ {
			if script[j].op != equal {
				last = j
			}
		}
		end := min(len(script), last+1+context)
		hunks = append(hunks, hunk{aStart: aLine[start], bStart: bLine[start], lines: script[start:end]})
		i = end
	}
	return hunks
}

func (h hunk) write(out *strings.Builder) {
	aCount, bCount := 0, 0
	for _, e := range h.lines {
		if e.op != insert {
			aCount++
		}
		if e.op != del {
			bCount++
		}
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", span(h.aStart, aCount), span(h.bStart, bCount))
	for _, e := range h.lines {
		out.WriteByte(byte(e.op))
		out.WriteString(e.text)
		out.WriteByte('\n')
	}
}

// span is a hunk's range the way diff -u writes it: 1-based start, and the
// count unless it is 1; an empty range names the line before it.
func span(start, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, count)
}
