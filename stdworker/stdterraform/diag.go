package stdterraform

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// diag is one error terraform reported, as its human-readable output shows
// it (-no-color).
type diag struct {
	summary string
	// location is where in the configuration the error is, e.g.
	// "main.tf line 3"; empty for errors about anything else (a download,
	// the state backend, a provider API).
	location string
	detail   string
}

// maxMessage bounds the message built from terraform's output.
const maxMessage = 2000

var (
	// locationLine is terraform's "  on main.tf line 3, in resource …:".
	locationLine = regexp.MustCompile(`^\s*on (.+? line \d+)(?:,.*)?:?\s*$`)
	// snippetLine is a line of quoted source: "   3: resource …".
	snippetLine = regexp.MustCompile(`^\s+\d+:`)
	// boxPrefix is the frame terraform draws around diagnostics when it
	// writes them without -no-color.
	boxPrefix = regexp.MustCompile(`^[│╷╵]\s?`)
)

// fromModuleDir is where terraform init -from-module stages a module; it
// names it in errors about the module, where "main.tf" is what a user wrote.
const fromModuleDir = ".terraform/init-from-module/root/"

// parseDiags extracts the errors (not the warnings) from terraform's output.
func parseDiags(out string) []diag {
	var diags []diag
	var cur *diag
	var detail []string
	flush := func() {
		if cur != nil {
			cur.detail = strings.Join(detail, " ")
			diags = append(diags, *cur)
		}
		cur, detail = nil, nil
	}
	inWarning := false
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(boxPrefix.ReplaceAllString(line, ""), " \r\t")
		switch {
		case strings.HasPrefix(line, "Error: "):
			flush()
			inWarning = false
			cur = &diag{summary: strings.TrimSpace(strings.TrimPrefix(line, "Error: "))}
			continue
		case strings.HasPrefix(line, "Warning: "):
			flush()
			inWarning = true
			continue
		}
		if cur == nil || inWarning {
			continue
		}
		if m := locationLine.FindStringSubmatch(line); m != nil && cur.location == "" && len(detail) == 0 {
			cur.location = strings.ReplaceAll(m[1], fromModuleDir, "")
			continue
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || snippetLine.MatchString(line) || strings.HasPrefix(trimmed, "├") || strings.HasPrefix(trimmed, "│") {
			continue
		}
		detail = append(detail, trimmed)
	}
	flush()
	return diags
}

// message renders terraform's errors for a resource's failure message: each
// error's summary, location and detail, at most maxMessage bytes. Output
// with no recognisable error is reduced to its last lines.
func message(out string) string {
	diags := parseDiags(out)
	if len(diags) == 0 {
		return truncate(lastLines(out, 5))
	}
	parts := make([]string, 0, len(diags))
	for _, d := range diags {
		s := d.summary
		if d.location != "" {
			s += " (" + d.location + ")"
		}
		if d.detail != "" {
			s += ": " + d.detail
		}
		parts = append(parts, s)
	}
	return truncate(strings.Join(parts, "; "))
}

// configError reports whether terraform's output holds an error that points
// into a file of the configuration: a syntax error, an unknown reference, a
// missing or mistyped variable. Retrying will not fix those. Errors about
// fetching the module point at "<main configuration>", not at a file.
func configError(out string) bool {
	for _, d := range parseDiags(out) {
		if d.inFile() {
			return true
		}
	}
	return false
}

// inFile reports whether d points into a file (not into terraform's own
// "<main configuration>" or the like).
func (d diag) inFile() bool {
	return d.location != "" && !strings.HasPrefix(d.location, "<")
}

// lastLines returns the last n non-blank lines of s, joined by " ".
func lastLines(s string, n int) string {
	var keep []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(boxPrefix.ReplaceAllString(line, ""))
		if line != "" {
			keep = append(keep, line)
		}
	}
	if len(keep) > n {
		keep = keep[len(keep)-n:]
	}
	return strings.Join(keep, " ")
}

// truncate cuts s to maxMessage bytes on a rune boundary, marking the cut.
func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage - len(" …")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + " …"
}

// variableError reports whether terraform's output holds an error about the
// values given for the module's variables (missing, mistyped): the spec must
// change before a retry can succeed. Other errors of an apply (a provider's
// API, a lock, the network) may pass.
func variableError(out string) bool {
	for _, d := range parseDiags(out) {
		if d.inFile() && strings.Contains(strings.ToLower(d.summary), "variable") {
			return true
		}
	}
	return false
}
