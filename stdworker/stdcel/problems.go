package stdcel

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with a graph, found by Compile.
type Problem struct {
	// Path locates the problem in the graph spec, e.g.
	// "resources[2].template.spec.port".
	Path string
	// Line and Column locate it inside the `${...}` expression at Path,
	// both counted from 1; 0 when it has no position in an expression.
	Line, Column int
	// Message says what is wrong.
	Message string
}

// String renders the problem like a compiler: `path:line:col: message`, or
// `path: message` without a position.
func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", p.Path, p.Line, p.Column, p.Message)
	}
	return fmt.Sprintf("%s: %s", p.Path, p.Message)
}

// CheckError is returned by Compile for a graph that cannot be served. It
// lists every problem found, in the order of the graph spec.
type CheckError struct {
	Problems []Problem
}

// maxReported bounds the problems one message lists, so a huge broken
// graph still produces a message the server accepts.
const maxReported = 50

// Error renders one problem per line.
func (e *CheckError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the graph has %d problem(s):", len(e.Problems))
	for i, p := range e.Problems {
		if i == maxReported {
			fmt.Fprintf(&b, "\n... and %d more", len(e.Problems)-maxReported)
			break
		}
		b.WriteString("\n")
		b.WriteString(p.String())
	}
	return b.String()
}

// problems collects problems during a check.
type problems struct {
	list []Problem
}

func (ps *problems) add(path string, format string, args ...any) {
	ps.list = append(ps.list, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

func (ps *problems) at(path string, line, col int, format string, args ...any) {
	ps.list = append(ps.list, Problem{Path: path, Line: line, Column: col, Message: fmt.Sprintf(format, args...)})
}

func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	return &CheckError{Problems: ps.list}
}

// fieldPath appends a JSON key to a graph path: `.key` for plain keys,
// `["odd key"]` otherwise.
func fieldPath(base, key string) string {
	plain := key != ""
	for i := 0; i < len(key); i++ {
		if !isIdentByte(key[i]) && key[i] != '-' {
			plain = false
			break
		}
	}
	if plain {
		return base + "." + key
	}
	return fmt.Sprintf("%s[%q]", base, key)
}

func indexPath(base string, i int) string {
	return fmt.Sprintf("%s[%d]", base, i)
}
