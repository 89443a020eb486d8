package main

import (
	"encoding/json"
	"strings"
)

func joinDoc(a, b string) string {
	return strings.TrimSpace(a + "\n" + b)
}

// docOf renders a schema's description, format, pattern, default and
// secrecy; "" when it has none.
func docOf(s any) string {
	o, ok := s.(schema)
	if !ok {
		return ""
	}
	var lines []string
	if d, ok := o["description"].(string); ok && strings.TrimSpace(d) != "" {
		lines = append(lines, strings.TrimSpace(d))
	}
	if f, ok := o["format"].(string); ok {
		lines = append(lines, "Format: "+f+".")
	}
	if p, ok := o["pattern"].(string); ok {
		lines = append(lines, "Pattern: `"+p+"`.")
	}
	if d, ok := o["default"]; ok {
		if b, err := json.Marshal(d); err == nil {
			lines = append(lines, "Default: "+string(b)+".")
		}
	}
	if o["writeOnly"] == true || o["x-converge-secret"] == true {
		lines = append(lines, "Secret: the task carries it in clear; never log it or put it in a field that is not secret (docs/secrets.md).")
	}
	return strings.Join(lines, "\n")
}

// commentWidth is where comment lines wrap.
const commentWidth = 100

// comment renders text as a Go comment, its lines wrapped, indented.
func comment(text, indent string) string {
	text = strings.TrimSpace(text)
	if text == "" {
		return ""
	}
	var b strings.Builder
	for _, l := range strings.Split(text, "\n") {
		words := strings.Fields(l)
		if len(words) == 0 {
			b.WriteString(indent + "//\n")
			continue
		}
		line := indent + "//"
		for i, w := range words {
			if i > 0 && len(line)+1+len(w) > commentWidth {
				b.WriteString(line + "\n")
				line = indent + "//"
			}
			line += " " + w
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
