package main

import (
	"bufio"
	"fmt"
	"regexp"
	"strings"
)

// A step is one marked fenced block of a page. A block is marked by an
// HTML comment on the line before its opening fence:
//
//	<!-- test: run -->          run the sh block; it must exit 0
//	<!-- test: run, fails -->   run the sh block; it must exit non-zero
//	<!-- test: start NAME -->   start the one-line sh block in the background
//	<!-- test: output -->       the block is what the previous step prints
//	<!-- test: file PATH -->    write the block to PATH (relative to the
//	                            current directory), as the reader creates
//	                            the file the page shows
//
// and one marker stands alone, where the prose tells the reader to stop a
// process (a worker, to restart it with other flags):
//
//	<!-- test: stop NAME -->    Ctrl-C the process started as NAME
//
// Unmarked blocks are prose for the reader and never run.
type step struct {
	line  int    // of the opening fence (of the marker, for stop), for messages
	kind  string // run, start, stop, output or file
	name  string // start, stop: the process's name; file: its path
	fails bool   // run: a non-zero exit is expected
	body  string
}

var markerRE = regexp.MustCompile(`^<!--\s*test:\s*(.*?)\s*-->$`)

// parseSteps reads the marked blocks of a Markdown page in order.
func parseSteps(page string) ([]step, error) {
	var steps []step
	var pending *step
	inFence := false
	var body []string
	sc := bufio.NewScanner(strings.NewReader(page))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case inFence && trimmed == "```":
			inFence = false
			if pending != nil {
				pending.body = strings.Join(body, "\n")
				steps = append(steps, *pending)
				pending = nil
			}
		case inFence:
			body = append(body, line)
		case strings.HasPrefix(trimmed, "```"):
			inFence, body = true, nil
			if pending != nil {
				pending.line = n
			}
		case pending != nil && trimmed != "":
			return nil, fmt.Errorf("line %d: the test marker above is not followed by a fenced block", n)
		default:
			m := markerRE.FindStringSubmatch(trimmed)
			if m == nil {
				continue
			}
			s, err := parseMarker(m[1])
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			if s.kind == "stop" {
				s.line = n
				steps = append(steps, s)
				continue
			}
			pending = &s
		}
	}
	if pending != nil || inFence {
		return nil, fmt.Errorf("the page ends inside a marked or fenced block")
	}
	return steps, nil
}

func parseMarker(text string) (step, error) {
	words := strings.Fields(strings.ReplaceAll(text, ",", " "))
	switch {
	case len(words) == 1 && words[0] == "run":
		return step{kind: "run"}, nil
	case len(words) == 2 && words[0] == "run" && words[1] == "fails":
		return step{kind: "run", fails: true}, nil
	case len(words) == 2 && words[0] == "start":
		return step{kind: "start", name: words[1]}, nil
	case len(words) == 2 && words[0] == "stop":
		return step{kind: "stop", name: words[1]}, nil
	case len(words) == 1 && words[0] == "output":
		return step{kind: "output"}, nil
	case len(words) == 2 && words[0] == "file":
		return step{kind: "file", name: words[1]}, nil
	}
	return step{}, fmt.Errorf("test marker %q: want run, run fails, start NAME, stop NAME, output or file PATH", text)
}

// matchOutput checks that got shows what the page shows. Each expected
// line must match a line of got, in order; a line "..." stands for any
// number of lines, and "..." inside a line for any text. Runs of spaces
// count as one, so aligned columns may be wider or narrower.
func matchOutput(want, got string) error {
	gotLines := strings.Split(got, "\n")
	i := 0
	for _, w := range strings.Split(want, "\n") {
		w = squeeze(w)
		if w == "..." || w == "" {
			continue
		}
		found := false
		for ; i < len(gotLines); i++ {
			if lineMatches(w, squeeze(gotLines[i])) {
				found, i = true, i+1
				break
			}
		}
		if !found {
			return fmt.Errorf("no line (in order) matches %q", w)
		}
	}
	return nil
}

func lineMatches(want, got string) bool {
	parts := strings.Split(want, "...")
	if !strings.HasPrefix(got, parts[0]) {
		return false
	}
	got = got[len(parts[0]):]
	for _, p := range parts[1:] {
		k := strings.Index(got, p)
		if k < 0 {
			return false
		}
		got = got[k+len(p):]
	}
	// Without a trailing "...", the line must end where the pattern does.
	return strings.HasSuffix(want, "...") || got == ""
}

func squeeze(s string) string { return strings.Join(strings.Fields(s), " ") }
